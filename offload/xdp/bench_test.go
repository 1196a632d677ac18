//go:build linux

package xdp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/prefixrate"
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

// benchPrefixFrame is benchFrame with the prefix limit on (drop) and the
// bucket of the frame's /24 empty for an hour when over is set.
func benchPrefixFrame(b *testing.B, frame []byte, over bool, want uint32) {
	p := loadForTest(b, Config{Port: testPort, Key: testKey, StaleAfter: 3600e9,
		PrefixRate: prefixrate.Config{Rate: 1, Burst: 1, Action: prefixrate.Drop}})
	if err := p.Beat(MonotonicNow()); err != nil {
		b.Fatal(err)
	}
	if over {
		if err := p.LimitPrefix(netip.MustParsePrefix("198.18.0.0/24"), MonotonicNow()+uint64(time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	act, per, err := p.objs.TrFastpath.Benchmark(frame, b.N, b.ResetTimer)
	if err != nil {
		b.Fatal(err)
	}
	if act != want {
		b.Fatalf("action %d, want %d", act, want)
	}
	b.ReportMetric(float64(per.Nanoseconds()), "kernel-ns/pkt")
}

// BenchmarkInitialOverPrefixRate: what the program spends on an Initial
// with a token from a prefix over its rate (dropped): issue 27's attack
// packet, against integrationtests/abuse's BenchmarkFloodOverPrefixRate for the host.
func BenchmarkInitialOverPrefixRate(b *testing.B) {
	benchPrefixFrame(b, udp4(testPort, initialWithToken(clientTok)), true, xdpDrop)
}

// BenchmarkInitialUnderPrefixRate: the same Initial from a prefix with no
// bucket: the limit's cost for a client within its rate (then redirected,
// here passed for want of a socket).
func BenchmarkInitialUnderPrefixRate(b *testing.B) {
	benchPrefixFrame(b, udp4(testPort, initialWithToken(clientTok)), false, xdpPass)
}
