//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
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

var nsSeq atomic.Int32

type testNet struct {
	nsC, nsS string
	destroy  func() // removes both namespaces; idempotent
}

// requireRoot skips tests that need namespaces, BPF and AF_XDP.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: the datapath tests need root (network namespaces, BPF, AF_XDP); CI runs them as root")
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

func hw(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// newTestNet creates the two namespaces and the veth pair (queues queues
// per end; 0: the kernel's default), removed by Cleanup even when the test
// fails.
func newTestNet(tb testing.TB, queues int) *testNet {
	tb.Helper()
	requireRoot(tb)
	id := fmt.Sprintf("%d-%d", os.Getpid(), nsSeq.Add(1))
	n := &testNet{nsC: "trdp-c-" + id, nsS: "trdp-s-" + id}
	var made []string
	var once sync.Once
	n.destroy = func() {
		once.Do(func() {
			for _, ns := range made {
				// Deleting a namespace destroys its veth end, and the pair.
				if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
					tb.Errorf("ip netns del %s: %v: %s", ns, err, out)
				}
			}
		})
	}
	tb.Cleanup(n.destroy)
	for _, ns := range []string{n.nsC, n.nsS} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			tb.Skipf("skipping: cannot create network namespace %s: %v: %s", ns, err, out)
		}
		made = append(made, ns)
	}
	var q []string
	if queues > 0 {
		q = []string{"numrxqueues", fmt.Sprint(queues), "numtxqueues", fmt.Sprint(queues)}
	}
	args := append([]string{"link", "add", ifC, "netns", n.nsC, "address", hw(macC)}, q...)
	args = append(args, "type", "veth", "peer", "name", ifS, "netns", n.nsS, "address", hw(macS))
	ipCmd(tb, append(args, q...)...)
	for _, s := range []struct {
		ns, dev  string
		ip, peer netip.Addr
		peerMAC  [6]byte
	}{{n.nsC, ifC, ipC, ipS, macS}, {n.nsS, ifS, ipS, ipC, macC}} {
		// No IPv6 link-local address: no neighbour discovery chatter.
		ipCmd(tb, "-n", s.ns, "link", "set", s.dev, "addrgenmode", "none")
		ipCmd(tb, "-n", s.ns, "addr", "add", s.ip.String()+"/30", "dev", s.dev)
		ipCmd(tb, "-n", s.ns, "link", "set", "lo", "up")
		ipCmd(tb, "-n", s.ns, "link", "set", s.dev, "up")
		// Static neighbours: an ARP request redirected to AF_XDP would
		// never be answered (the program passes ARP, but be independent
		// of that).
		ipCmd(tb, "-n", s.ns, "neigh", "replace", s.peer.String(), "lladdr", hw(s.peerMAC), "dev", s.dev, "nud", "permanent")
	}
	// Complete UDP checksums from the client, as a real NIC would deliver.
	n.in(tb, n.nsC, func() { disableTXChecksum(tb, ifC) })
	// Until linkwatch has seen the carrier a veth sends into noop_qdisc,
	// which drops everything: wait for both ends to be operationally up.
	n.in(tb, n.nsC, func() { waitOperUp(tb, ifC) })
	n.in(tb, n.nsS, func() { waitOperUp(tb, ifS) })
	return n
}

// in runs fn on this goroutine's thread switched into namespace ns and
// switches back afterwards (also when fn fails the test). Sockets created
// inside stay in ns.
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
		// A thread that cannot switch back stays locked, so the runtime
		// discards it with the goroutine.
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

// waitOperUp polls rtnetlink until dev's operstate is UP (hang guard:
// hangGuard).
func waitOperUp(tb testing.TB, dev string) {
	tb.Helper()
	idx := ifindex(tb, dev)
	const operUp = 6 // IF_OPER_UP
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		state, err := operState(idx)
		if err != nil {
			tb.Fatal(err)
		}
		if state == operUp {
			return
		}
		if time.Since(start) > hangGuard {
			tb.Fatalf("%s not operationally up (state %d)", dev, state)
		}
	}
}

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

// disableTXChecksum is "ethtool -K dev tx off" through the legacy
// ETHTOOL_STXCSUM ioctl (no ethtool binary needed).
func disableTXChecksum(tb testing.TB, dev string) {
	tb.Helper()
	const ethtoolSTXCSUM = 0x17
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Close(fd)
	val := &struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM}
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

// udpSocket opens a UDP socket in the current namespace bound to local and,
// when remote is valid, connected to it. Reads time out after timeout, a
// hang guard.
func udpSocket(tb testing.TB, local, remote netip.AddrPort, timeout time.Duration) int {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		tb.Fatal(err)
	}
	// Beyond rmem_max (root may): a burst of replies must not overflow.
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

// readUDP reads one datagram, retrying on EINTR (the runtime's preemption
// signal interrupts reads that have SO_RCVTIMEO).
func readUDP(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

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
