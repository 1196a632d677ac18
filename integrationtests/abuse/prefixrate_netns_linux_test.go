//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package abuse

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// TestServeXDPPrefixRate is issue 27's fast-path limit in the integrated
// mode, through `turboretry serve --offload xdp --offload-prefix-rate`:
// the clients' /24 may start 4 connection attempts (no refill during the
// test); quic-go's fetches get through until the agent has taken them,
// exactly 4 (a ClientHello in two datagrams takes one token; before
// issue 27's fix it took two, and 1 or 2 fetches got through), then one is
// refused with CONNECTION_REFUSED at once, by the agent (the program
// leaves it to the agent to build the close), before the QUIC host sees
// it. Needs root and AF_XDP.
func TestServeXDPPrefixRate(t *testing.T) {
	s := startXDPServer(t, "the integrated offload's prefix-rate test (network namespaces, XDP, AF_XDP)",
		"--offload-prefix-rate", "0.001", "--offload-prefix-burst", "4")
	ctx := ctxFor(t)
	fetched, refused := 0, false
	for i := 0; i < 6 && !refused; i++ {
		start := time.Now()
		err := benignFetch(ctx, s, 0, "", nil)
		switch {
		case err == nil:
			fetched++
		case isRefused(err):
			refused = true
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the refusal took %v", d)
			}
		default:
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	if fetched != 4 || !refused {
		t.Fatalf("%d fetches, refused %v: want 4 fetches (one token each), then a refusal", fetched, refused)
	}
	// The agent publishes its packet counts when its queue runs empty,
	// after it sent the refusal: the client can see the close first.
	refusedByAgent := series("turboretry_agent_packets_total", "verdict", "send_reply", "reason", "prefix_rate_refused")
	var m map[string]float64
	testutil.WaitFor(t, "the agent to count its refusal", func() bool {
		m = s.scrape()
		return m[refusedByAgent] >= 1
	})
	taken := m[series("turboretry_agent_prefix_rate_tokens_total", "result", "taken")]
	toAgent := m[series("turboretry_xdp_packets_total", "reason", "agent_prefix_rate")]
	closes := m[refusedByAgent]
	hostRefused := m[series("turboretry_quic_refused_total", "reason", "prefix_rate")]
	t.Logf("%d fetches; tokens taken %.0f, over-rate Initials redirected %.0f, refused by the agent %.0f, by the host %.0f", fetched, taken, toAgent, closes, hostRefused)
	if taken != 4 || toAgent < 1 || closes < 1 || hostRefused != 0 {
		t.Errorf("metrics: %.0f tokens taken (want 4), %.0f redirected, %.0f closes (want >= 1 each), %.0f host refusals (want 0)",
			taken, toAgent, closes, hostRefused)
	}
}
