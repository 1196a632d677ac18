package flood

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkGeneratePool is the per-packet cost of pool mode (a pointer
// into the pre-built packets).
func BenchmarkGeneratePool(b *testing.B) {
	g, err := NewGenerator(GeneratorConfig{PoolSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(UDPPayloadSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerateReprotect is the per-packet cost of fresh connection
// IDs: Initial key derivation plus sealing 1200 bytes.
func BenchmarkGenerateReprotect(b *testing.B) {
	g, err := NewGenerator(GeneratorConfig{Reprotect: true})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, UDPPayloadSize)
	b.SetBytes(UDPPayloadSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFramePool and BenchmarkFrameReprotect add the Ethernet, IPv4
// and UDP headers with spoofed sources and both checksums.
func BenchmarkFramePool(b *testing.B)      { benchFrames(b, false) }
func BenchmarkFrameReprotect(b *testing.B) { benchFrames(b, true) }

func benchFrames(b *testing.B, reprotect bool) {
	g, err := NewGenerator(GeneratorConfig{PoolSize: 1024, Reprotect: reprotect})
	if err != nil {
		b.Fatal(err)
	}
	fs, err := NewFrameSource(g, FrameConfig{Target: netip.MustParseAddrPort("10.77.0.2:4433")})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, FrameLen)
	b.SetBytes(FrameLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fs.Next(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendmmsgLoopback measures the whole pool-mode pipeline (Run,
// generator, sendmmsg) against a loopback socket that nobody reads; the
// kernel drops what overflows its buffer, which costs the sender nothing.
func BenchmarkSendmmsgLoopback(b *testing.B) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	s, err := NewUDPSender(rx.LocalAddr().(*net.UDPAddr).AddrPort(), DefaultBatch)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g, err := NewGenerator(GeneratorConfig{PoolSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(UDPPayloadSize)
	b.ReportAllocs()
	b.ResetTimer()
	st, err := Run(context.Background(), RunConfig{Count: uint64(b.N), Duration: time.Hour}, g, s)
	if err != nil {
		b.Fatal(err)
	}
	if st.Errors != 0 {
		b.Fatalf("%d send errors: %s", st.Errors, st.FirstError)
	}
	b.ReportMetric(st.PPS, "pps")
}
