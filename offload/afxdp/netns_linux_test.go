//go:build linux

package afxdp

import (
	"fmt"
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/turboretry/turboretry/internal/netnstest"
	"golang.org/x/sys/unix"
)

// Test network: namespace A holds tra0 (198.18.0.1), namespace B its veth
// peer trb0 (198.18.0.2) where the AF_XDP socket lives. 198.18.0.0/15 is the
// benchmarking range of docs/design.md; the traffic never leaves the namespaces.
var (
	ipA  = netip.MustParseAddr("198.18.0.1")
	ipB  = netip.MustParseAddr("198.18.0.2")
	macA = frame.MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0a}
	macB = frame.MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0b}
)

type testNet struct {
	nsA, nsB string
	ifA, ifB int // interface indices, each in its own namespace
}

// requireRoot skips tests that need namespaces, AF_XDP and BPF.
func requireRoot(tb testing.TB) {
	tb.Helper()
	netnstest.RequireRoot(tb, "AF_XDP tests (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN for setns)")
	netnstest.RequireAFXDP(tb)
}

// newTestNet creates the namespace pair with queues queues per veth end,
// removed again by Cleanup even when the test fails.
func newTestNet(tb testing.TB, queues int) *testNet {
	tb.Helper()
	requireRoot(tb)
	n := &testNet{nsA: netnstest.New(tb, "trxdp-a"), nsB: netnstest.New(tb, "trxdp-b")}
	q := fmt.Sprint(queues)
	netnstest.Veth(tb, netnstest.End{NS: n.nsA, Dev: "tra0", MAC: hw(macA)}, netnstest.End{NS: n.nsB, Dev: "trb0", MAC: hw(macB)},
		"numrxqueues", q, "numtxqueues", q)
	for _, s := range []struct {
		ns, dev  string
		ip, peer netip.Addr
		peerMAC  frame.MAC
	}{{n.nsA, "tra0", ipA, ipB, macB}, {n.nsB, "trb0", ipB, ipA, macA}} {
		netnstest.Up(tb, s.ns, s.dev, netip.PrefixFrom(s.ip, 30))
		// Static neighbours: ARP requests to B would land in the AF_XDP
		// socket and never be answered.
		netnstest.Neigh(tb, s.ns, s.dev, s.peer, hw(s.peerMAC))
	}
	n.in(tb, n.nsA, func() {
		n.ifA = ifindex(tb, "tra0")
		// Make A's kernel write complete UDP checksums, so frames reaching
		// the AF_XDP socket can be checked strictly (see frame.ParseLax).
		if err := netnstest.TXChecksumOff("tra0"); err != nil {
			tb.Fatal(err)
		}
	})
	n.in(tb, n.nsB, func() { n.ifB = ifindex(tb, "trb0") })
	netnstest.WaitUp(tb, n.nsA, "tra0")
	netnstest.WaitUp(tb, n.nsB, "trb0")
	return n
}

// dump logs both namespaces' links, counters and UDP statistics, to
// explain a failure.
func (n *testNet) dump(tb testing.TB) {
	tb.Helper()
	for _, ns := range []string{n.nsA, n.nsB} {
		out, _ := exec.Command("ip", "-n", ns, "-s", "-d", "link", "show").CombinedOutput()
		tb.Logf("namespace %s links:\n%s", ns, out)
		out, _ = exec.Command("ip", "netns", "exec", ns, "sh", "-c", "grep -E '^(Ip|Udp|Icmp):' /proc/net/snmp; ip neigh; ip route").CombinedOutput()
		tb.Logf("namespace %s stack:\n%s", ns, out)
	}
}

func hw(m frame.MAC) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func ifindex(tb testing.TB, name string) int {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		tb.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		tb.Fatalf("ifindex of %s: %v", name, err)
	}
	return int(ifr.Uint32())
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
// netnstest.UDPSocket) whose reads time out after five seconds.
func udpSocket(tb testing.TB, local, remote netip.AddrPort) int {
	tb.Helper()
	return netnstest.UDPSocket(tb, local, remote, 5*time.Second)
}

func readUDP(fd int, buf []byte) (int, error) { return netnstest.ReadUDP(fd, buf) }

// redirectProgram is the minimal XDP program of the tests: every packet of
// queue q goes to slot q of xsks, or to the stack when the slot is empty.
// Built from instructions, so no C compiler is needed.
func redirectProgram(tb testing.TB) (*ebpf.Program, *ebpf.Map) {
	tb.Helper()
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "afxdp_test", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 128})
	if err != nil {
		tb.Skipf("skipping: cannot create an XSKMAP here: %v", err)
	}
	tb.Cleanup(func() { xsks.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:    "afxdp_redirect",
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			// r2 = ctx->rx_queue_index (struct xdp_md offset 16)
			asm.LoadMem(asm.R2, asm.R1, 16, asm.Word),
			asm.LoadMapPtr(asm.R1, xsks.FD()),
			// flags: XDP_PASS is the action when the slot is empty
			asm.Mov.Imm(asm.R3, 2),
			asm.FnRedirectMap.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		tb.Skipf("skipping: the kernel refuses a minimal XDP program: %v", err)
	}
	tb.Cleanup(func() { prog.Close() })
	return prog, xsks
}

// attachModes are the XDP attach modes tried in order: native first (veth
// supports it), generic (SKB) second.
var attachModes = []struct {
	name  string
	flags link.XDPAttachFlags
}{{"native", link.XDPDriverMode}, {"generic", link.XDPGenericMode}}

// attach puts prog on ifindex (call inside the namespace) in the first of
// the modes named by only (all when empty) that the kernel accepts.
func attach(tb testing.TB, prog *ebpf.Program, ifindex int, only ...string) string {
	tb.Helper()
	for _, m := range attachModes {
		if len(only) > 0 && !slices.Contains(only, m.name) {
			continue
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: m.flags})
		if err == nil {
			tb.Cleanup(func() { l.Close() })
			return m.name
		}
		tb.Logf("attach XDP %s mode: %v", m.name, err)
	}
	tb.Fatal("cannot attach the XDP program in any mode")
	return ""
}

// xskEnv is a test network with an AF_XDP socket on queue 0 of trb0 and the
// redirect program attached there.
type xskEnv struct {
	*testNet
	xsk    *Socket
	xskMap *ebpf.Map
	mode   string
}

// newXSKEnv builds it with the program attached in one of modes (any when
// none is named).
func newXSKEnv(tb testing.TB, cfg Config, modes ...string) *xskEnv {
	tb.Helper()
	e := &xskEnv{testNet: newTestNet(tb, 1)}
	prog, xsks := redirectProgram(tb)
	e.xskMap = xsks
	e.in(tb, e.nsB, func() {
		s, err := Open(e.ifB, 0, cfg)
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		tb.Cleanup(func() {
			if err := s.Close(); err != nil {
				tb.Errorf("Close: %v", err)
			}
		})
		if err := s.Register(xsks, 0); err != nil {
			tb.Fatal(err)
		}
		e.xsk = s
		e.mode = attach(tb, prog, e.ifB, modes...)
	})
	return e
}
