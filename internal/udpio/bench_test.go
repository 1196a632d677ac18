package udpio

import (
	"testing"
	"time"
)

// BenchmarkLoopbackOneByOne is the baseline: WriteToUDPAddrPort and ReadFromUDPAddrPort,
// one datagram of 1350 bytes per system call, in bursts of 32 (one op per datagram).
func BenchmarkLoopbackOneByOne(b *testing.B) {
	sc := listenUDP(b, "udp4", "127.0.0.1:0")
	rc := listenUDP(b, "udp4", "127.0.0.1:0")
	if err := rc.SetReadBuffer(4 << 20); err != nil {
		b.Fatal(err)
	}
	rc.SetReadDeadline(time.Now().Add(10 * time.Minute)) // hang guard only
	to := addrPort(rc)
	out := payload(1, 1350)
	in := make([]byte, 2048)
	b.SetBytes(1350)
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += 32 {
		burst := min(32, b.N-sent)
		for range burst {
			if _, err := sc.WriteToUDPAddrPort(out, to); err != nil {
				b.Fatal(err)
			}
		}
		for range burst {
			if _, _, err := rc.ReadFromUDPAddrPort(in); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
}
