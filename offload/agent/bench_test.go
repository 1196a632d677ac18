package agent

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// benchEnv has a long retry token lifetime, so the benchmark's token stays
// valid however long it runs (on the real clock, the Issuer rolls its TID
// every second as in production).
func benchEnv(b *testing.B, workers int) *testEnv {
	b.Helper()
	return newTestEnv(b, func(c *Config) {
		c.RetryMaxAge = time.Hour
		c.Workers = workers
	})
}

type benchPackets struct {
	retry, forward, vn, garbage, badToken []byte
}

func makeBenchPackets(b *testing.B, env *testEnv) benchPackets {
	b.Helper()
	tok, rscid := agentRetryToken(b, env)
	bad := bytes.Clone(tok)
	bad[len(bad)-1] ^= 1
	return benchPackets{
		retry:    clientInitial(b, wire.Version1, odcid, cscid, nil, 1200),
		forward:  clientInitial(b, wire.Version1, rscid, cscid, tok, 1200),
		vn:       unknownVersionPacket(0x1a2a3a4a, odcid, cscid, 1200),
		garbage:  []byte{0xc3, 0x00, 0x00, 0x00, 0x01, 0x30, 0x01},
		badToken: clientInitial(b, wire.Version1, rscid, cscid, bad, 1200),
	}
}

func benchProcess(b *testing.B, pick func(benchPackets) []byte, want Reason) {
	env := benchEnv(b, 1)
	pkt := pick(makeBenchPackets(b, env))
	out := make([]byte, 0, MaxReplyLen)
	if _, r, _ := env.w.Process(pkt, clientAddr, out); r != want {
		b.Fatalf("reason %v, want %v", r, want)
	}
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		env.w.Process(pkt, clientAddr, out)
	}
}

func benchProcessParallel(b *testing.B, pick func(benchPackets) []byte, want Reason) {
	n := runtime.GOMAXPROCS(0)
	env := benchEnv(b, n)
	pkt := pick(makeBenchPackets(b, env))
	var next atomic.Int32
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// One worker per goroutine, as the datapath pins one per queue.
		w := env.eng.Worker(int(next.Add(1)-1) % n)
		out := make([]byte, 0, MaxReplyLen)
		if _, r, _ := w.Process(pkt, clientAddr, out); r != want {
			b.Errorf("reason %v, want %v", r, want)
			return
		}
		for pb.Next() {
			if _, r, _ := w.Process(pkt, clientAddr, out); r != want {
				b.Errorf("reason %v, want %v", r, want)
				return
			}
		}
	})
}

func retryPkt(p benchPackets) []byte    { return p.retry }
func forwardPkt(p benchPackets) []byte  { return p.forward }
func vnPkt(p benchPackets) []byte       { return p.vn }
func garbagePkt(p benchPackets) []byte  { return p.garbage }
func badTokenPkt(p benchPackets) []byte { return p.badToken }

var badTagReason = ReasonOfToken(token.ReasonBadTag)

func BenchmarkRetry(b *testing.B) { benchProcess(b, retryPkt, ReasonRetry) }
func BenchmarkForwardValidToken(b *testing.B) {
	benchProcess(b, forwardPkt, ReasonRetryTokenForwarded)
}
func BenchmarkVersionNegotiation(b *testing.B) { benchProcess(b, vnPkt, ReasonVersionNegotiation) }
func BenchmarkDropGarbage(b *testing.B)        { benchProcess(b, garbagePkt, ReasonMalformed) }
func BenchmarkDropBadToken(b *testing.B)       { benchProcess(b, badTokenPkt, badTagReason) }

func BenchmarkRetryParallel(b *testing.B) { benchProcessParallel(b, retryPkt, ReasonRetry) }
func BenchmarkForwardValidTokenParallel(b *testing.B) {
	benchProcessParallel(b, forwardPkt, ReasonRetryTokenForwarded)
}
func BenchmarkVersionNegotiationParallel(b *testing.B) {
	benchProcessParallel(b, vnPkt, ReasonVersionNegotiation)
}
func BenchmarkDropGarbageParallel(b *testing.B) { benchProcessParallel(b, garbagePkt, ReasonMalformed) }

func BenchmarkObserveEgress(b *testing.B) {
	env := benchEnv(b, 1)
	pkt := longPacket(b, wire.PacketTypeHandshake, wire.Version1, cscid, odcid, 1200)
	b.ReportAllocs()
	for b.Loop() {
		env.w.ObserveEgress(pkt)
	}
}
