package benchmark

import (
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// The bench network, inside 198.18.0.0/15: the client namespace bridges
// one veth to the server (srv0, where XDP runs) and one to the attacker,
// so benign and attack traffic share the server's one interface. Spoofed
// sources come from spoofNet, which the server routes back towards the
// attacker, so every variant pays for sending its Retries.
var (
	ipClient   = netip.MustParseAddr("198.18.0.1")
	ipServer   = netip.MustParseAddr("198.18.0.2")
	ipAttacker = netip.MustParseAddr("198.18.0.3")
	spoofNet   = netip.MustParsePrefix("198.18.128.0/17")
	macClient  = "02:00:5e:00:12:0c"
	macServer  = "02:00:5e:00:12:05"
	macAttack  = "02:00:5e:00:12:0a"
	serverPort = uint16(4433)
	serverIf   = "srv0"
	attackIf   = "atk0"
)

// benchNet names the namespaces of one benchmark; dpu is empty but for
// the split variant's network (newSplitBenchNet).
type benchNet struct{ client, attacker, server, dpu string }

// needRoot skips unless namespaces, XDP and AF_XDP are available.
func needRoot(tb testing.TB) {
	tb.Helper()
	netnstest.RequireRoot(tb, "the offload benchmarks (network namespaces, XDP, AF_XDP)")
	netnstest.RequireAFXDP(tb)
}

// newBenchNet creates the namespaces; Cleanup deletes them, and the links
// with them.
func newBenchNet(tb testing.TB) *benchNet { return buildBenchNet(tb, false) }

// buildBenchNet creates the namespaces, with the split variant's dpu
// namespace between the client bridge and the server if withDPU.
func buildBenchNet(tb testing.TB, withDPU bool) *benchNet {
	tb.Helper()
	needRoot(tb)
	n := &benchNet{client: netnstest.New(tb, "trb-c"), attacker: netnstest.New(tb, "trb-a"), server: netnstest.New(tb, "trb-s")}
	c, a, s := n.client, n.attacker, n.server
	netnstest.IP(tb, "-n", c, "link", "add", "br0", "address", macClient, "type", "bridge", "stp_state", "0", "forward_delay", "0")
	if withDPU {
		n.dpu = netnstest.New(tb, "trb-d")
		addDPU(tb, n)
	} else {
		netnstest.Veth(tb, netnstest.End{NS: c, Dev: "cs0"}, netnstest.End{NS: s, Dev: serverIf, MAC: macServer})
	}
	netnstest.Veth(tb, netnstest.End{NS: c, Dev: "ca0"}, netnstest.End{NS: a, Dev: attackIf, MAC: macAttack})
	for _, l := range []string{"cs0", "ca0"} {
		netnstest.IP(tb, "-n", c, "link", "set", l, "master", "br0")
		netnstest.Up(tb, c, l, netip.Prefix{})
	}
	netnstest.Up(tb, c, "br0", netip.PrefixFrom(ipClient, 24))
	netnstest.Up(tb, s, serverIf, netip.PrefixFrom(ipServer, 24))
	netnstest.Up(tb, a, attackIf, netip.PrefixFrom(ipAttacker, 24))
	netnstest.Neigh(tb, c, "br0", ipServer, macServer)
	netnstest.Neigh(tb, c, "br0", ipAttacker, macAttack)
	netnstest.Neigh(tb, s, serverIf, ipClient, macClient)
	netnstest.Neigh(tb, s, serverIf, ipAttacker, macAttack)
	netnstest.Neigh(tb, a, attackIf, ipServer, macServer)
	netnstest.Neigh(tb, a, attackIf, ipClient, macClient)
	// Retries to spoofed sources go to the attacker, which drops them.
	netnstest.IP(tb, "-n", s, "route", "add", spoofNet.String(), "via", ipAttacker.String())
	// Senders complete UDP checksums as a real NIC would: a frame that the
	// XDP program passes on carries no checksum-offload state.
	must(tb, n.in(c, func() error {
		for _, d := range []string{"br0", "cs0", "ca0"} {
			if err := netnstest.TXChecksumOff(d); err != nil {
				return err
			}
		}
		return nil
	}))
	must(tb, n.in(a, func() error { return netnstest.TXChecksumOff(attackIf) }))
	for _, w := range [][2]string{{c, "br0"}, {c, "cs0"}, {c, "ca0"}, {s, serverIf}, {a, attackIf}} {
		netnstest.WaitUp(tb, w[0], w[1])
	}
	if withDPU {
		waitDPU(tb, n)
	}
	return n
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// in runs fn on the calling goroutine's thread switched into namespace ns
// (see netnstest.In).
func (n *benchNet) in(ns string, fn func() error) error { return netnstest.In(ns, fn) }
