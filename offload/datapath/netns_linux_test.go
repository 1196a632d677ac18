package datapath

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/turboretry/turboretry/internal/netnstest"
	"golang.org/x/sys/unix"
)

// The test network: namespace C (the client) holds dpc0 at 198.18.0.1,
// namespace S (the server, where the datapath runs) its veth peer dps0 at
// 198.18.0.2. Addresses come from the benchmarking range 198.18.0.0/15;
// the traffic never leaves the two namespaces.
var (
	ipC      = netip.MustParseAddr("198.18.0.1")
	ipS      = netip.MustParseAddr("198.18.0.2")
	macC     = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x01, 0x0c}
	macS     = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x01, 0x05}
	ifC      = "dpc0"
	ifS      = "dps0"
	portS    = uint16(4433)
	clientAP = netip.AddrPortFrom(ipC, 50000)
	serverAP = netip.AddrPortFrom(ipS, portS)
)

// hangGuard bounds every wait of the tests; nothing is expected to take
// more than a fraction of it.
const hangGuard = 10 * time.Second

type testNet struct {
	nsC, nsS string
	destroy  func() // removes both namespaces; idempotent
}

// requireRoot skips tests that need namespaces, BPF and AF_XDP.
func requireRoot(tb testing.TB) {
	tb.Helper()
	netnstest.RequireRoot(tb, "the datapath tests (network namespaces, BPF, AF_XDP)")
	netnstest.RequireAFXDP(tb)
}

func hw(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// newTestNet creates the two namespaces and the veth pair (queues queues
// per end; 0: the kernel's default), removed by Cleanup even when the test
// fails.
func newTestNet(tb testing.TB, queues int) *testNet {
	tb.Helper()
	requireRoot(tb)
	n := &testNet{nsC: netnstest.New(tb, "trdp-c"), nsS: netnstest.New(tb, "trdp-s")}
	n.destroy = func() {
		netnstest.Del(tb, n.nsC)
		netnstest.Del(tb, n.nsS)
	}
	var q []string
	if queues > 0 {
		q = []string{"numrxqueues", fmt.Sprint(queues), "numtxqueues", fmt.Sprint(queues)}
	}
	netnstest.Veth(tb, netnstest.End{NS: n.nsC, Dev: ifC, MAC: hw(macC)}, netnstest.End{NS: n.nsS, Dev: ifS, MAC: hw(macS)}, q...)
	for _, s := range []struct {
		ns, dev  string
		ip, peer netip.Addr
		peerMAC  [6]byte
	}{{n.nsC, ifC, ipC, ipS, macS}, {n.nsS, ifS, ipS, ipC, macC}} {
		netnstest.Up(tb, s.ns, s.dev, netip.PrefixFrom(s.ip, 30))
		// Static neighbours: an ARP request redirected to AF_XDP would
		// never be answered (the program passes ARP, but be independent
		// of that).
		netnstest.Neigh(tb, s.ns, s.dev, s.peer, hw(s.peerMAC))
	}
	// Complete UDP checksums from the client, as a real NIC would deliver.
	n.in(tb, n.nsC, func() {
		if err := netnstest.TXChecksumOff(ifC); err != nil {
			tb.Fatal(err)
		}
	})
	netnstest.WaitUp(tb, n.nsC, ifC)
	netnstest.WaitUp(tb, n.nsS, ifS)
	return n
}

// in runs fn on this goroutine's thread switched into namespace ns (see
// netnstest.In), and switches back afterwards, also when fn fails the test.
func (n *testNet) in(tb testing.TB, ns string, fn func()) {
	tb.Helper()
	if err := netnstest.In(ns, func() error { fn(); return nil }); err != nil {
		tb.Fatal(err)
	}
}

// udpSocket opens a UDP socket in the current namespace (see
// netnstest.UDPSocket); reads time out after timeout, a hang guard.
func udpSocket(tb testing.TB, local, remote netip.AddrPort, timeout time.Duration) int {
	tb.Helper()
	return netnstest.UDPSocket(tb, local, remote, timeout)
}

func readUDP(fd int, buf []byte) (int, error) { return netnstest.ReadUDP(fd, buf) }

// loadRefused reports whether err says the kernel will not run the
// program here (so the test skips rather than fails).
func loadRefused(err error) bool {
	return errors.Is(err, ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.ENOSYS)
}

// dump logs both namespaces' links and UDP statistics, to explain a
// failure.
func (n *testNet) dump(tb testing.TB) {
	tb.Helper()
	for _, ns := range []string{n.nsC, n.nsS} {
		out, _ := exec.Command("ip", "-n", ns, "-s", "-d", "link", "show").CombinedOutput()
		tb.Logf("namespace %s links:\n%s", ns, out)
		out, _ = exec.Command("ip", "netns", "exec", ns, "sh", "-c", "grep -E '^(Ip|Udp):' /proc/net/snmp").CombinedOutput()
		tb.Logf("namespace %s stack:\n%s", ns, out)
	}
}
