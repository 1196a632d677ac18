//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package abuse

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
)

// The fallback test's network: the attacker's namespace (198.18.2.3)
// joined by one veth pair to the server's (198.18.2.2, where the XDP
// datapath runs on abs0).
var (
	fbServerIP  = netip.MustParseAddr("198.18.2.2")
	fbClientIP  = netip.MustParseAddr("198.18.2.3")
	fbServerMAC = "02:00:5e:00:03:05"
	fbClientMAC = "02:00:5e:00:03:0a"
)

// TestFloodXDPAgentPaused is the integrated mode's host fallback under the
// flood (3000 Initials): `turboretry serve --offload xdp` runs in a
// network namespace with its agent paused (SIGUSR1, fail-open). Once the
// agent's heartbeat is stale the XDP program passes every Initial to the
// host, whose default policy must answer the flood as without an offload:
// >= 95 % Retries (sent by the host, the agent sending none), the same
// connection and memory bounds, benign fetches working. Needs root and
// AF_XDP.
func TestFloodXDPAgentPaused(t *testing.T) {
	s := startXDPServer(t, "the integrated offload's fallback test (network namespaces, XDP, AF_XDP)")
	agentRetries := series("turboretry_agent_packets_total", "verdict", "send_reply", "reason", "retry")
	failOpen := series("turboretry_xdp_packets_total", "reason", "pass_fail_open")
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the agent to pause", func() bool { return s.scrape()["turboretry_agent_paused"] == 1 })
	before := s.scrape()

	r := runFlood(t, s, floodPlan{total: 3000, rate: 1000, probe: true})
	r.check(t)
	after := r.last
	if after["turboretry_agent_paused"] != 1 {
		t.Error("the agent was not paused through the flood")
	}
	if n := after[agentRetries] - before[agentRetries]; n != 0 {
		t.Errorf("the paused agent sent %.0f Retries", n)
	}
	if n := after[failOpen] - before[failOpen]; n < float64(r.retries) {
		t.Errorf("the XDP program passed %.0f packets failing open, fewer than the %d Initials the host retried", n, r.retries)
	}
	t.Logf("XDP: %.0f packets passed failing open", after[failOpen]-before[failOpen])
}

// startXDPServer runs `turboretry serve --offload xdp` in a network
// namespace joined by a veth pair to the clients' (see the addresses
// above), with args after the suite's. Needs root and AF_XDP; skips with
// why otherwise.
func startXDPServer(t *testing.T, why string, args ...string) *server {
	netnstest.RequireRoot(t, why)
	netnstest.RequireAFXDP(t)
	nsS, nsC := netnstest.New(t, "trab-s"), netnstest.New(t, "trab-c")
	netnstest.Veth(t, netnstest.End{NS: nsC, Dev: "abc0", MAC: fbClientMAC}, netnstest.End{NS: nsS, Dev: "abs0", MAC: fbServerMAC})
	netnstest.Up(t, nsS, "abs0", netip.PrefixFrom(fbServerIP, 24))
	netnstest.Up(t, nsC, "abc0", netip.PrefixFrom(fbClientIP, 24))
	// Static neighbours: nothing depends on ARP passing the XDP program.
	netnstest.Neigh(t, nsS, "abs0", fbClientIP, fbClientMAC)
	netnstest.Neigh(t, nsC, "abc0", fbServerIP, fbServerMAC)
	// Complete UDP checksums on the sender's side, as a real NIC delivers
	// them: a frame the program passes keeps no checksum-offload state.
	if err := netnstest.In(nsC, func() error { return netnstest.TXChecksumOff("abc0") }); err != nil {
		t.Fatal(err)
	}
	netnstest.WaitUp(t, nsS, "abs0")
	netnstest.WaitUp(t, nsC, "abc0")
	return startServerWith(t, serveOptions{
		ns: nsS, clientNS: nsC, serverName: "localhost",
		args: append([]string{"--addr", netip.AddrPortFrom(fbServerIP, 4433).String(), "--offload", "xdp", "--iface", "abs0"}, args...),
	})
}
