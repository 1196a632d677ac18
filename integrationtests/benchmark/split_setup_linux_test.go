package benchmark

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSplitBenchNet: in (d)'s network a datagram from the client namespace
// crosses both bridges (and p0, no program yet) and reaches the server.
func TestSplitBenchNet(t *testing.T) { checkDatagramCrosses(t, newSplitBenchNet(t)) }

// TestSplitVariantServes: variant (d) is what it claims to be. The agent
// process has its program on p0, a benign request completes through it,
// the agent sent the Retry and the host none (so the client's Initial with
// the agent's token was forwarded, and the host's connection IDs were
// announced: otherwise p0 drops the client's short headers and the
// request fails).
func TestSplitVariantServes(t *testing.T) {
	n := newSplitBenchNet(t)
	srv := startServer(t, n, splitAgent)
	if srv.agentPID == 0 {
		t.Fatal("no agent process")
	}
	out, err := exec.Command("ip", "-n", n.dpu, "-d", "link", "show", "dev", wireIf).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show %s: %v: %s", wireIf, err, out)
	}
	if !strings.Contains(string(out), "prog/xdp") {
		t.Fatalf("no XDP program on %s in the dpu namespace:\n%s", wireIf, out)
	}
	if _, err := srv.get(5 * time.Second); err != nil {
		t.Fatalf("benign request: %v", err)
	}
	host, agentSent, ok := srv.retries()
	if !ok {
		t.Fatal("could not scrape the server's and the agent's /metrics")
	}
	// startServer's readiness request and ours: two fresh connections.
	if host != 0 || agentSent < 2 {
		t.Fatalf("host Retries %.0f, agent Retries %.0f; want 0 and at least 2", host, agentSent)
	}
}

func TestParseRetries(t *testing.T) {
	body := `# HELP turboretry_quic_retries_sent_total Retries.
# TYPE turboretry_quic_retries_sent_total counter
turboretry_quic_retries_sent_total 3
# TYPE turboretry_agent_packets_total counter
turboretry_agent_packets_total{reason="retry",verdict="send_reply"} 7
turboretry_agent_packets_total{reason="bad_token",verdict="drop"} 100
turboretry_agent_packets_total{reason="version_negotiation",verdict="send_reply"} 9
`
	host, agentSent, err := parseRetries(body)
	if err != nil || host != 3 || agentSent != 7 {
		t.Fatalf("parseRetries = %v, %v, %v; want 3, 7", host, agentSent, err)
	}
	if _, _, err := parseRetries(body + "turboretry_quic_retries_sent_total notanumber\n"); err == nil {
		t.Fatal("parseRetries accepted a malformed body")
	}
}

func TestRunBenchAgentNeedsSecret(t *testing.T) {
	err := runBenchAgent(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), secretName) {
		t.Fatalf("runBenchAgent without a secret file: %v; want an error naming %s", err, secretName)
	}
}
