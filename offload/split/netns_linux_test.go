package split

import (
	"fmt"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/token"
)

// The emulation (docs/split.md): namespace client holds c0 (198.18.0.1);
// namespace dpu a bridge br0 (198.18.0.254, the control address) over p0,
// the veth peer of c0 (the wire port, where the XDP program attaches), and
// pf0hpf, the veth peer of h0 (the host port); namespace host holds h0
// (198.18.0.2), where the QUIC server runs. Addresses come from the
// benchmarking range 198.18.0.0/15 and the traffic never leaves the three
// namespaces.
var (
	ipClient  = netip.MustParseAddr("198.18.0.1")
	ipHost    = netip.MustParseAddr("198.18.0.2")
	ipDPU     = netip.MustParseAddr("198.18.0.254")
	macClient = "02:00:5e:00:02:01"
	macHost   = "02:00:5e:00:02:02"
	macBridge = "02:00:5e:00:02:fe"
	wireIf    = "p0"
	hostIf    = "pf0hpf"
	serverAP  = netip.AddrPortFrom(ipHost, 4433)
	controlAP = netip.AddrPortFrom(ipDPU, 4434)
)

// hangGuard bounds every wait; nothing is expected to take more than a
// fraction of it.
const hangGuard = 15 * time.Second

// emulation is the three namespaces of the split-mode emulation.
type emulation struct {
	client, dpu, host string
}

// newEmulation builds the namespaces, veths and bridge, removed by Cleanup.
func newEmulation(tb testing.TB) *emulation {
	tb.Helper()
	netnstest.RequireRoot(tb, "the split-mode emulation (network namespaces, BPF, AF_XDP)")
	netnstest.RequireAFXDP(tb)
	e := &emulation{client: netnstest.New(tb, "trsp-c"), dpu: netnstest.New(tb, "trsp-d"), host: netnstest.New(tb, "trsp-h")}
	netnstest.Veth(tb, netnstest.End{NS: e.client, Dev: "c0", MAC: macClient}, netnstest.End{NS: e.dpu, Dev: wireIf})
	netnstest.Veth(tb, netnstest.End{NS: e.host, Dev: "h0", MAC: macHost}, netnstest.End{NS: e.dpu, Dev: hostIf})
	netnstest.IP(tb, "-n", e.dpu, "link", "add", "br0", "address", macBridge, "type", "bridge")
	for _, dev := range []string{wireIf, hostIf} {
		netnstest.IP(tb, "-n", e.dpu, "link", "set", dev, "master", "br0")
		netnstest.Up(tb, e.dpu, dev, netip.Prefix{})
	}
	netnstest.Up(tb, e.dpu, "br0", netip.PrefixFrom(ipDPU, 24))
	netnstest.Up(tb, e.client, "c0", netip.PrefixFrom(ipClient, 24))
	netnstest.Up(tb, e.host, "h0", netip.PrefixFrom(ipHost, 24))
	// Static neighbours: nothing depends on ARP crossing the program.
	netnstest.Neigh(tb, e.client, "c0", ipHost, macHost)
	netnstest.Neigh(tb, e.host, "h0", ipClient, macClient)
	netnstest.Neigh(tb, e.host, "h0", ipDPU, macBridge)
	// Complete UDP checksums from the client, as a real NIC delivers
	// them: the agent forwards frames unchanged, and a veth frame would
	// carry only the pseudo-header sum.
	if err := netnstest.In(e.client, func() error { return netnstest.TXChecksumOff("c0") }); err != nil {
		tb.Fatal(err)
	}
	// Registered after the namespaces' own Cleanups, so it runs before them.
	tb.Cleanup(func() {
		if tb.Failed() {
			e.dump(tb)
		}
	})
	for _, d := range []struct{ ns, dev string }{{e.client, "c0"}, {e.host, "h0"}, {e.dpu, wireIf}, {e.dpu, hostIf}, {e.dpu, "br0"}} {
		netnstest.WaitUp(tb, d.ns, d.dev)
	}
	return e
}

// in runs fn in namespace ns on this goroutine's thread.
func in(tb testing.TB, ns string, fn func() error) {
	tb.Helper()
	if err := netnstest.In(ns, fn); err != nil {
		tb.Fatal(err)
	}
}

// xdpAttached reports whether p0 in the dpu namespace has an XDP program.
func (e *emulation) xdpAttached(tb testing.TB) bool {
	tb.Helper()
	out, err := exec.Command("ip", "-n", e.dpu, "-d", "link", "show", "dev", wireIf).CombinedOutput()
	if err != nil {
		tb.Fatalf("ip link show %s: %v: %s", wireIf, err, out)
	}
	return xdpLine(string(out))
}

// dump logs the namespaces' links, to explain a failure.
func (e *emulation) dump(tb testing.TB) {
	tb.Helper()
	for _, ns := range []string{e.client, e.dpu, e.host} {
		out, _ := exec.Command("ip", "-n", ns, "-s", "-d", "link", "show").CombinedOutput()
		tb.Logf("namespace %s:\n%s", ns, out)
	}
}

// testKeyRing is the root secret agent and host share.
func testKeyRing(tb testing.TB) (*token.KeyRing, []byte) {
	tb.Helper()
	root := testutil.Secret(0x60)
	return testutil.KeyRing(tb, root), root
}

// agentConfig is the agent's configuration in the emulation. Its heartbeat
// staleness is long enough that a loaded machine never fails open by
// accident (tests that check nothing passed failing open). The kill and
// restart tests need no shorter one: a killed agent's program is removed
// by the kernel, which is what fails open there.
func agentConfig(kr *token.KeyRing) Config {
	return Config{
		WireIface:  wireIf,
		HostIface:  hostIf,
		Port:       serverAP.Port(),
		KeyRing:    kr,
		Control:    controlAP,
		StaleAfter: 5 * time.Second,
	}
}

func fmtCIDs(cids [][]byte) string {
	s := ""
	for _, c := range cids {
		s += fmt.Sprintf(" %x", c)
	}
	return s
}
