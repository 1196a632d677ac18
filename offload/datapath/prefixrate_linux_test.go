package datapath

import (
	"bytes"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/offload/xdp"
)

// validatedInitial walks the client through a Retry and returns its
// Initial with the token (not sent yet) and the Retry's SCID.
func (env *testEnv) validatedInitial(t *testing.T) (pkt, rscid []byte) {
	t.Helper()
	dcid, scid := randomCID(t, 8), randomCID(t, 8)
	env.send(t, clientInitial(t, dcid, scid))
	buf := make([]byte, 2048)
	n, err := readUDP(env.client, buf)
	if err != nil {
		t.Fatalf("client got no Retry: %v (stats %+v)", err, env.stats(t))
	}
	rscid, tok := env.checkRetry(t, buf[:n], dcid, scid)
	return initialWithToken(t, rscid, scid, tok), rscid
}

// expectDelivered waits for pkt at Deliver.
func (env *testEnv) expectDelivered(t *testing.T, pkt []byte) {
	t.Helper()
	select {
	case d := <-env.delivered:
		if !bytes.Equal(d.pkt, pkt) {
			t.Fatalf("Deliver got another datagram (%d bytes)", len(d.pkt))
		}
	case <-time.After(hangGuard):
		t.Fatalf("a validated Initial within the rate never reached Deliver (stats %+v)", env.stats(t))
	}
}

// TestPrefixRateDropInXDP: the client's /24 may send 2 validated Initials
// (the refill, one per 1000 s, never comes during the test). Both reach
// Deliver; the agent then hands the empty bucket to the XDP program, which
// drops the third before the agent or the host sees it, while Initials
// without a token still get their Retry.
func TestPrefixRateDropInXDP(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 0.001, Burst: 2, Action: prefixrate.Drop}
	}, hangGuard)
	for range 2 {
		pkt, _ := env.validatedInitial(t)
		env.send(t, pkt)
		env.expectDelivered(t, pkt)
	}
	over, _ := env.validatedInitial(t) // the Retry still comes
	env.send(t, over)
	// The agent publishes its counters when its queue runs empty, which
	// may come after the client already holds the third Retry; so the
	// wait covers the Retry count too, not only the drop.
	s := env.waitStats(t, "the XDP program's drop and the third Retry's count", func(s Stats) bool {
		return s.XDP[xdp.DropPrefixRate] == 1 && s.Agent.Packets[agent.ReasonRetry] == 3
	})
	select {
	case <-env.delivered:
		t.Fatal("the over-rate Initial reached Deliver")
	default:
	}
	if s.Delivered != 2 || s.Agent.Packets[agent.ReasonRetry] != 3 || s.Agent.Packets[agent.ReasonPrefixRateDropped] != 0 ||
		s.PrefixRate.Allowed != 2 || s.PrefixRate.Prefixes != 1 || s.PrefixWriteErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestPrefixRateRefuse: with Refuse the program leaves the over-rate
// Initial to the agent, which answers CONNECTION_REFUSED, a close the
// client opens with its Initial keys, without validating the token.
func TestPrefixRateRefuse(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 0.001, Burst: 1}
	}, hangGuard)
	pkt, _ := env.validatedInitial(t)
	env.send(t, pkt)
	env.expectDelivered(t, pkt)
	over, rscid := env.validatedInitial(t)
	env.send(t, over)
	buf := make([]byte, 2048)
	n, err := readUDP(env.client, buf)
	if err != nil {
		t.Fatalf("no answer to the over-rate Initial: %v (stats %+v)", err, env.stats(t))
	}
	var h wire.LongHeader
	if err := wire.ParseLongHeader(buf[:n], &h); err != nil || h.Type != wire.PacketTypeInitial {
		t.Fatalf("answer %v (%v), want an Initial", h.Type, err)
	}
	_, opener, err := handshake.NewInitialKeys(rscid, handshake.Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	payload, _, err := opener.UnprotectPacket(bytes.Clone(buf[:h.PacketLen]), h.PNOffset, -1)
	if err != nil {
		t.Fatalf("the client cannot open the close: %v", err)
	}
	var f wire.Frame
	if _, err := wire.ParseFrame(payload, &f); err != nil || f.Type != wire.FrameTypeConnectionClose || f.ErrorCode != 0x02 {
		t.Fatalf("frame %v code %#x (%v), want CONNECTION_REFUSED", f.Type, f.ErrorCode, err)
	}
	s := env.waitStats(t, "the refusal's counters", func(s Stats) bool {
		return s.XDP[xdp.AgentPrefixRate] == 1 && s.Agent.Packets[agent.ReasonPrefixRateRefused] == 1
	})
	if s.Delivered != 1 {
		t.Fatalf("%d delivered, want 1", s.Delivered)
	}
}
