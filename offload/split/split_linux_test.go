package split

import (
	"crypto/rand"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/xdp"
)

// startAgent starts the agent in the dpu namespace, closed by Cleanup.
func startAgent(tb testing.TB, e *emulation, cfg Config) *Agent {
	tb.Helper()
	var a *Agent
	in(tb, e.dpu, func() error {
		var err error
		a, err = Start(cfg)
		return err
	})
	tb.Cleanup(func() {
		if err := a.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return a
}

func (a *Agent) mustStats(tb testing.TB) Stats {
	tb.Helper()
	s, err := a.Stats()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// shortHeader is a 1-RTT packet shape (fixed bit set) to dcid: enough for
// the fast path to look the DCID up.
func shortHeader(dcid []byte) []byte {
	p := append([]byte{0x41}, dcid...)
	return append(p, make([]byte, 40)...)
}

// TestSplitEndToEnd runs the agent in the dpu namespace and our QUIC
// echo server (Retry always, announcing its connection IDs) in the host
// namespace, and shows:
//   - a short-header packet to an unknown connection ID from the client
//     namespace is dropped at p0 (drop_miss, the only packet counted);
//   - our QUIC client's token-less Initial gets the agent's Retry, which
//     the client follows; the Initial carrying the agent's token leaves
//     through pf0hpf (forwarded frame) and the host accepts the agent's
//     token, having sent no Retry itself;
//   - the handshake completes and a stream echoes, which needs the
//     host's connection IDs in the fast path: they arrive only by
//     announcement (the host's NEW_CONNECTION_ID IDs are encrypted), and
//     every one the host announced is in the cache; a short header to one
//     passes p0;
//   - the metrics carry the datapath's, the host port's and the control
//     channel's counters.
func TestSplitEndToEnd(t *testing.T) {
	e := newEmulation(t)
	kr, root := testKeyRing(t)
	a := startAgent(t, e, agentConfig(kr))
	h := startHost(t, e, root, kr)
	if !e.xdpAttached(t) {
		t.Fatal("no XDP program on p0 after Start")
	}

	// (c) Unknown connection ID: dropped at p0.
	var probe int
	in(t, e.client, func() error {
		probe = netnstest.UDPSocket(t, netip.AddrPortFrom(ipClient, 50000), serverAP, hangGuard)
		return nil
	})
	unknown := make([]byte, 8)
	_, _ = rand.Read(unknown)
	if _, err := unix.Write(probe, shortHeader(unknown)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "drop_miss", func() bool { return a.mustStats(t).Datapath.XDP[xdp.DropMiss] == 1 })
	if s := a.mustStats(t).Datapath.XDP; s[xdp.PassHit] != 0 || s[xdp.PassFailOpen] != 0 || s[xdp.AgentInitial] != 0 {
		t.Errorf("XDP counters after the probe: %v; want only drop_miss", s)
	}

	// (a) and (b): a real client through the agent.
	c := echo(t, e, "through the split agent")
	// The agent's verdicts are published at its next flush and the frame
	// counters follow the send to the host: the echo can finish first.
	s := waitStats(t, "the agent's Retry and forward counts", func() Stats { return a.mustStats(t) }, func(s Stats) bool {
		p := s.Datapath.Agent.Packets
		return p[agent.ReasonRetry] >= 1 && p[agent.ReasonRetryTokenForwarded] >= 1 && s.Datapath.Forwarded >= 1 && s.HostSent == s.Datapath.Forwarded
	})
	av := h.tr.AddressValidationStats()
	if s.Datapath.Agent.Packets[agent.ReasonRetry] < 1 || s.Datapath.Agent.Packets[agent.ReasonRetryTokenForwarded] < 1 {
		t.Errorf("agent verdicts %v; want at least one Retry and one forwarded retry token", s.Datapath.Agent.Packets)
	}
	if s.Datapath.Forwarded < 1 || s.HostSent != s.Datapath.Forwarded || s.HostFailed != 0 || s.Datapath.Delivered != 0 {
		t.Errorf("forwarded %d, host port sent %d failed %d, delivered %d; want every forwarded frame sent out of pf0hpf",
			s.Datapath.Forwarded, s.HostSent, s.HostFailed, s.Datapath.Delivered)
	}
	if av.RetriesSent != 0 || av.TokensAccepted["agent/retry"] < 1 {
		t.Errorf("host: %d Retries sent, tokens accepted %v; want none sent and the agent's retry token accepted", av.RetriesSent, av.TokensAccepted)
	}
	cids := h.announced()
	if len(cids) < 2 {
		t.Fatalf("the host announced %d connection IDs; want its handshake SCID and NEW_CONNECTION_ID IDs", len(cids))
	}
	testutil.WaitFor(t, "every announced connection ID in the cache", func() bool {
		for _, cid := range h.announced() {
			if !a.Admitted(cid) {
				return false
			}
		}
		return true
	})
	// The listener counts a message after inserting (admitting) its IDs.
	s = waitStats(t, "the control counters to count every announced ID", func() Stats { return a.mustStats(t) },
		func(s Stats) bool { return s.Control.Messages >= 1 && s.Control.CIDs >= uint64(len(cids)) })
	if s.Control.Messages < 1 || s.Control.CIDs < uint64(len(cids)) {
		t.Errorf("control: %d messages, %d IDs; want at least %d IDs", s.Control.Messages, s.Control.CIDs, len(cids))
	}
	for r, n := range s.Control.Rejected {
		if n != 0 {
			t.Errorf("control channel rejected %d messages (reason %d)", n, r)
		}
	}
	t.Logf("host announced%s; fast-path drops after the handshake: %d (client packets that raced the announcement of their ID)",
		fmtCIDs(cids), s.Datapath.XDP[xdp.DropMiss]-1)

	// A short header to an announced ID passes p0.
	hits := a.mustStats(t).Datapath.XDP[xdp.PassHit]
	if _, err := unix.Write(probe, shortHeader(cids[len(cids)-1])); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "pass_hit", func() bool { return a.mustStats(t).Datapath.XDP[xdp.PassHit] > hits })
	_ = c

	if s := a.mustStats(t); s.HostSent == 0 || s.Datapath.Forwarded == 0 || s.Control.CIDs == 0 || s.Control.Rejected[announce.ReasonMAC] != 0 {
		t.Errorf("stats %+v: want frames sent out of the host port, announced IDs, no bad MAC", s)
	}
}

// TestStartRefusesMissingInterface: a host port that does not exist fails
// Start with datapath.ErrNoInterface, and nothing is left attached.
func TestStartRefusesMissingInterface(t *testing.T) {
	e := newEmulation(t)
	kr, _ := testKeyRing(t)
	cfg := agentConfig(kr)
	cfg.HostIface = "nope0"
	in(t, e.dpu, func() error {
		a, err := Start(cfg)
		if err == nil {
			a.Close()
			t.Fatal("Start succeeded without the host port")
		}
		if !strings.Contains(err.Error(), "nope0") || !errors.Is(err, datapath.ErrNoInterface) {
			t.Errorf("Start: %v; want ErrNoInterface naming nope0", err)
		}
		return nil
	})
	if e.xdpAttached(t) {
		t.Error("a failed Start left the XDP program on p0")
	}
}
