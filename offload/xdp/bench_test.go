//go:build linux

package xdp

import (
	"testing"
)

// benchFrame runs the program b.N times on frame inside the kernel
// (BPF_PROG_TEST_RUN with repeat) and reports the kernel's time per packet.
func benchFrame(b *testing.B, frame []byte, want uint32) {
	p := loadFiltering(b)
	if err := p.Cache().Insert(fuzzKnownCID); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	act, per, err := p.objs.TrFastpath.Benchmark(frame, b.N, b.ResetTimer)
	if err != nil {
		b.Fatal(err)
	}
	if act != want {
		b.Fatalf("action %d, want %d", act, want)
	}
	b.ReportMetric(float64(per.Nanoseconds()), "kernel-ns/pkt")
}

func BenchmarkShortHeaderHit(b *testing.B) {
	benchFrame(b, udp4(testPort, shortPacket(fuzzKnownCID)), xdpPass)
}

func BenchmarkShortHeaderMiss(b *testing.B) {
	benchFrame(b, udp4(testPort, shortPacket([]byte("unknown!"))), xdpDrop)
}

func BenchmarkHandshakeHitIPv6(b *testing.B) {
	benchFrame(b, udp6(testPort, longPacket(typeHandshake, 1, fuzzKnownCID, 1200)), xdpPass)
}

func BenchmarkInitialNoSocket(b *testing.B) {
	benchFrame(b, udp4(testPort, longPacket(typeInitial, 1, fuzzKnownCID, 1200)), xdpPass)
}

func BenchmarkOtherPort(b *testing.B) {
	benchFrame(b, udp4(testPort+1, shortPacket(fuzzKnownCID)), xdpPass)
}
