package agent

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
)

// FuzzProcess feeds arbitrary datagrams to a worker: it must never panic,
// its verdict must match its reason, a reply must be a well-formed Retry
// (with a valid integrity tag) or Version Negotiation packet within
// MaxReplyLen, and the packet must come out unchanged.
func FuzzProcess(f *testing.F) {
	// A long retry token lifetime keeps the seeded token valid however
	// long the fuzzing runs.
	env := newTestEnv(f, func(c *Config) { c.RetryMaxAge = 24 * time.Hour })
	tok, rscid := agentRetryToken(f, env)
	f.Add(clientInitial(f, wire.Version1, odcid, cscid, nil, 1200))
	f.Add(clientInitial(f, wire.Version2, odcid, cscid, nil, 1200))
	f.Add(clientInitial(f, wire.Version1, rscid, cscid, tok, 1200))
	f.Add(clientInitial(f, wire.Version1, odcid, cscid, nil, 1100))
	f.Add(unknownVersionPacket(0x1a2a3a4a, odcid, cscid, 1200))
	f.Add(unknownVersionPacket(0, odcid, cscid, 40))
	f.Add(longPacket(f, wire.PacketTypeHandshake, wire.Version1, odcid, cscid, 100))
	f.Add([]byte{0x40, 1, 2, 3})
	f.Add([]byte{})

	var mu sync.Mutex // one worker, one goroutine at a time
	out := make([]byte, 0, MaxReplyLen)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		mu.Lock()
		defer mu.Unlock()
		orig := bytes.Clone(pkt)
		v, r, reply := env.w.Process(pkt, clientAddr, out)
		if v != r.Verdict() || r == ReasonNone || int(r) >= NumReasons {
			t.Fatalf("verdict %v with reason %v (%d)", v, r, r)
		}
		if !bytes.Equal(pkt, orig) {
			t.Fatal("packet modified")
		}
		if (v == SendReply) != (len(reply) > 0) || len(reply) > MaxReplyLen {
			t.Fatalf("verdict %v with a %d-byte reply", v, len(reply))
		}
		switch r {
		case ReasonRetry, ReasonRetryBadNewToken:
			var h wire.LongHeader
			if err := wire.ParseLongHeader(reply, &h); err != nil || h.Type != wire.PacketTypeRetry {
				t.Fatalf("Retry reply: %v %v", h.Type, err)
			}
			dcid, _ := wire.ParseDestConnID(pkt, 0)
			if err := handshake.VerifyRetryIntegrityTag(reply, handshake.Version(h.Version), dcid); err != nil {
				t.Fatalf("Retry tag: %v", err)
			}
		case ReasonVersionNegotiation:
			if _, _, _, err := wire.ParseVersionNegotiation(reply, nil); err != nil {
				t.Fatalf("VN reply: %v", err)
			}
		}
		env.w.ObserveEgress(pkt)
	})
}
