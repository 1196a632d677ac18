package split

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quic"
)

// TestSplitPrefixRate: the split agent limits validated Initials by source
// prefix. Its /24's burst lets our QUIC client connect and echo through
// the agent; once the agent has taken the burst, a further dial from the
// same /24 is refused with CONNECTION_REFUSED at once (the program leaves
// the Initial to the agent, which refuses it without validating), and the
// host sees no Initial of it.
func TestSplitPrefixRate(t *testing.T) {
	e := newEmulation(t)
	kr, root := testKeyRing(t)
	cfg := agentConfig(kr)
	// No refill during the test; 2 datagrams of a ClientHello fit.
	cfg.PrefixRate = prefixrate.Config{Rate: 0.001, Burst: 2}
	a := startAgent(t, e, cfg)
	startHost(t, e, root, kr)
	echo(t, e, "within the prefix's burst")

	var refused error
	for i := 0; i < 3 && refused == nil; i++ {
		var udp *net.UDPConn
		in(t, e.client, func() error {
			var err error
			udp, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipClient, 0)))
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		start := time.Now()
		c, err := quic.Dial(ctx, udp, net.UDPAddrFromAddrPort(serverAP),
			&tls.Config{InsecureSkipVerify: true, NextProtos: []string{testALPN}}, &quic.Config{HandshakeIdleTimeout: hangGuard})
		cancel()
		if err == nil {
			_ = c.CloseWithError(0, "")
			udp.Close()
			continue // the burst had room for this one too
		}
		udp.Close()
		var te *quic.TransportError
		if !errors.As(err, &te) || !te.Remote || te.ErrorCode != quic.ConnectionRefused {
			t.Fatalf("dial %d: %v, want CONNECTION_REFUSED from the agent", i, err)
		}
		if d := time.Since(start); d > hangGuard/2 {
			t.Fatalf("the refusal took %v", d)
		}
		refused = err
	}
	if refused == nil {
		t.Fatal("3 more dials from the /24 connected past its burst of 2")
	}
	s := waitStats(t, "the refusal's counters", func() Stats { return a.mustStats(t) }, func(s Stats) bool {
		return s.Datapath.Agent.Packets[agent.ReasonPrefixRateRefused] >= 1 && s.Datapath.XDP[xdp.AgentPrefixRate] >= 1
	})
	if s.Datapath.PrefixRate.Allowed != 2 {
		t.Fatalf("%d Initials took a token, want the burst of 2", s.Datapath.PrefixRate.Allowed)
	}
}
