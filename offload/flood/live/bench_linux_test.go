package live

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/flood"
)

// BenchmarkLive is the generator alone on one CPU: b.N frames, unpaced,
// into a veth whose peer drops them in XDP. ns/op is wall time per frame;
// cpu-ns/frame the sending thread's CPU per frame (which includes the
// peer's XDP drop: the veth runs it on the sending CPU).
func BenchmarkLive(b *testing.B) {
	for _, mode := range []Mode{RandomCIDs, Pool} {
		b.Run(mode.String(), func(b *testing.B) {
			p := newPair(b)
			must(b, netnstest.In(p.rcv, func() error {
				s, err := AttachDropSink("rcv0")
				if err == nil {
					b.Cleanup(func() { s.Close() })
				}
				return err
			}))
			g := newGen(b, p, mode, nil)
			var st Stats
			b.ResetTimer()
			must(b, netnstest.In(p.gen, func() error {
				var err error
				st, err = g.Run(context.Background(), flood.RunConfig{Count: uint64(b.N), Duration: time.Minute})
				return err
			}))
			b.StopTimer()
			if st.Sent != uint64(b.N) {
				b.Fatalf("sent %d of %d: %+v", st.Sent, b.N, st)
			}
			b.ReportMetric(st.PPS, "pps")
			b.ReportMetric(float64(st.CPU.Nanoseconds())/float64(st.Sent), "cpu-ns/frame")
			b.ReportMetric(float64(st.Refused), "refused")
			runtime.KeepAlive(g)
		})
	}
}

// BenchmarkAFPacket is offload/flood's AF_PACKET sendmmsg sender (pool
// mode, 64 frames per call) into the same sink, for comparison.
func BenchmarkAFPacket(b *testing.B) {
	p := newPair(b)
	must(b, netnstest.In(p.rcv, func() error {
		s, err := AttachDropSink("rcv0")
		if err == nil {
			b.Cleanup(func() { s.Close() })
		}
		return err
	}))
	var ps *flood.PacketSender
	must(b, netnstest.In(p.gen, func() (err error) {
		ps, err = flood.NewPacketSender("gen0", 0)
		return err
	}))
	defer ps.Close()
	gen, err := flood.NewGenerator(flood.GeneratorConfig{})
	must(b, err)
	src, err := flood.NewFrameSource(gen, flood.FrameConfig{Target: target, Spoof: spoofTest, SrcMAC: ps.HardwareAddr()})
	must(b, err)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	b.ResetTimer()
	st, err := flood.Run(context.Background(), flood.RunConfig{Count: uint64(b.N), Duration: time.Minute}, src, ps)
	b.StopTimer()
	must(b, err)
	b.ReportMetric(st.PPS, "pps")
	b.ReportMetric(float64((threadCPU()-cpu0).Nanoseconds())/float64(max(st.Sent, 1)), "cpu-ns/frame")
}
