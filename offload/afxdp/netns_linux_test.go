//go:build linux

package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Test network: namespace A holds tra0 (198.18.0.1), namespace B its veth
// peer trb0 (198.18.0.2) where the AF_XDP socket lives. 198.18.0.0/15 is the
// benchmarking range of DESIGN.md; the traffic never leaves the namespaces.
var (
	ipA  = netip.MustParseAddr("198.18.0.1")
	ipB  = netip.MustParseAddr("198.18.0.2")
	macA = MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0a}
	macB = MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0b}
)

var nsCounter atomic.Int32

type testNet struct {
	nsA, nsB string
	ifA, ifB int // interface indices, each in its own namespace
}

// requireRoot skips tests that need namespaces, AF_XDP and BPF.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: AF_XDP tests need root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN for setns); CI runs them as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("skipping: needs ip (iproute2) to create the test network namespaces")
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		tb.Skip("skipping: kernel without AF_XDP (EAFNOSUPPORT)")
	}
	if err == nil {
		unix.Close(fd)
	}
}

func ipCmd(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTestNet creates the namespace pair with queues queues per veth end,
// removed again by Cleanup even when the test fails.
func newTestNet(tb testing.TB, queues int) *testNet {
	tb.Helper()
	requireRoot(tb)
	id := fmt.Sprintf("%d-%d", os.Getpid(), nsCounter.Add(1))
	n := &testNet{nsA: "trxdp-a-" + id, nsB: "trxdp-b-" + id}
	for _, ns := range []string{n.nsA, n.nsB} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			tb.Skipf("skipping: cannot create network namespace %s: %v: %s", ns, err, out)
		}
		tb.Cleanup(func() {
			// Deleting the namespace destroys the veth pair with it.
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				tb.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		})
	}
	q := fmt.Sprint(queues)
	ipCmd(tb, "link", "add", "tra0", "netns", n.nsA, "numrxqueues", q, "numtxqueues", q, "address", hw(macA),
		"type", "veth", "peer", "name", "trb0", "netns", n.nsB, "numrxqueues", q, "numtxqueues", q, "address", hw(macB))
	for _, s := range []struct {
		ns, dev  string
		ip, peer netip.Addr
		peerMAC  MAC
	}{{n.nsA, "tra0", ipA, ipB, macB}, {n.nsB, "trb0", ipB, ipA, macA}} {
		// No IPv6 link-local address, so no neighbour discovery chatter.
		ipCmd(tb, "-n", s.ns, "link", "set", s.dev, "addrgenmode", "none")
		ipCmd(tb, "-n", s.ns, "addr", "add", s.ip.String()+"/30", "dev", s.dev)
		ipCmd(tb, "-n", s.ns, "link", "set", "lo", "up")
		ipCmd(tb, "-n", s.ns, "link", "set", s.dev, "up")
		// Static neighbours: ARP requests to B would land in the AF_XDP
		// socket and never be answered.
		ipCmd(tb, "-n", s.ns, "neigh", "replace", s.peer.String(), "lladdr", hw(s.peerMAC), "dev", s.dev, "nud", "permanent")
	}
	n.in(tb, n.nsA, func() {
		n.ifA = ifindex(tb, "tra0")
		// Make A's kernel write complete UDP checksums, so frames reaching
		// the AF_XDP socket can be checked strictly (see ParseFrameLax).
		disableTXChecksum(tb, "tra0")
	})
	n.in(tb, n.nsB, func() { n.ifB = ifindex(tb, "trb0") })
	// Until linkwatch (deferred work, rate limited to once a second) has
	// seen the carrier, a device sends through noop_qdisc, which drops
	// everything; wait for both ends to be operationally up.
	n.in(tb, n.nsA, func() { waitOperUp(tb, n.ifA) })
	n.in(tb, n.nsB, func() { waitOperUp(tb, n.ifB) })
	return n
}

// waitOperUp polls rtnetlink until the interface's operstate is UP, failing
// after five seconds.
func waitOperUp(tb testing.TB, ifindex int) {
	tb.Helper()
	const operUp = 6 // IF_OPER_UP
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		state, err := operState(ifindex)
		if err != nil {
			tb.Fatal(err)
		}
		if state == operUp {
			return
		}
		if time.Since(start) > waitLimit {
			tb.Fatalf("interface %d not operationally up (state %d)", ifindex, state)
		}
	}
}

// operState reads IFLA_OPERSTATE of an interface in the current namespace.
func operState(ifindex int) (uint8, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return 0, err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, err
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg ||
			int(int32(binary.NativeEndian.Uint32(m.Data[4:8]))) != ifindex {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_OPERSTATE && len(a.Value) >= 1 {
				return a.Value[0], nil
			}
		}
	}
	return 0, fmt.Errorf("interface %d not found", ifindex)
}

// disableTXChecksum turns off TX checksum offload on dev (ethtool -K dev tx
// off) with the legacy ETHTOOL_STXCSUM ioctl, which needs no ethtool binary.
func disableTXChecksum(tb testing.TB, dev string) {
	tb.Helper()
	const ethtoolSTXCSUM = 0x17
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Close(fd)
	val := &struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM, data: 0}
	// struct ifreq: the name, then ifr_data pointing at struct ethtool_value.
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(val)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(val)
	if e != 0 {
		tb.Fatalf("ethtool tx off %s: %v", dev, e)
	}
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

func hw(m MAC) string {
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

// in runs fn on this goroutine's thread switched into namespace ns, and
// switches back afterwards (also when fn fails the test). Sockets created
// inside stay in ns; using them afterwards needs no switch.
func (n *testNet) in(tb testing.TB, ns string, fn func()) {
	tb.Helper()
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("open own netns: %v", err)
	}
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(orig)
		runtime.UnlockOSThread()
		tb.Fatalf("open netns %s: %v", ns, err)
	}
	defer func() {
		// A thread that cannot go back stays locked, so the runtime
		// discards it with the goroutine instead of reusing it.
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			tb.Errorf("setns back: %v", err)
		} else {
			runtime.UnlockOSThread()
		}
		unix.Close(orig)
		unix.Close(target)
	}()
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		tb.Fatalf("setns %s: %v", ns, err)
	}
	fn()
}

// udpSocket opens a blocking UDP socket in the current namespace bound to
// local and, when remote is valid, connected to it; reads time out after
// five seconds so a lost packet fails instead of hanging.
func udpSocket(tb testing.TB, local, remote netip.AddrPort) int {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}); err != nil {
		tb.Fatal(err)
	}
	// Beyond net.core.rmem_max (root may): a burst must not overflow it.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: local.Addr().As4(), Port: int(local.Port())}); err != nil {
		tb.Fatalf("bind %v: %v", local, err)
	}
	if remote.IsValid() {
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: remote.Addr().As4(), Port: int(remote.Port())}); err != nil {
			tb.Fatalf("connect %v: %v", remote, err)
		}
	}
	return fd
}

// readUDP reads one datagram from a socket made by udpSocket, retrying when
// a signal (the runtime's preemption signal among them) interrupts it: with
// SO_RCVTIMEO set, the kernel does not restart the read by itself.
func readUDP(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

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
