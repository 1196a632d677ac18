//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package benchmark

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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

var netSeq atomic.Int32

// benchNet names the three namespaces of one benchmark.
type benchNet struct{ client, attacker, server string }

// needRoot skips unless namespaces, XDP and AF_XDP are available.
func needRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: the offload benchmarks need root (network namespaces, XDP, AF_XDP)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("skipping: needs ip (iproute2)")
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		tb.Skip("skipping: kernel without AF_XDP")
	}
	if err == nil {
		unix.Close(fd)
	}
}

// ipCmds runs ip once per command line; each line is split on spaces.
func ipCmds(tb testing.TB, lines ...string) {
	tb.Helper()
	for _, l := range lines {
		if out, err := exec.Command("ip", strings.Fields(l)...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", l, err, out)
		}
	}
}

// newBenchNet creates the namespaces; Cleanup deletes them, and the links
// with them.
func newBenchNet(tb testing.TB) *benchNet {
	tb.Helper()
	needRoot(tb)
	id := fmt.Sprintf("%d-%d", os.Getpid(), netSeq.Add(1))
	n := &benchNet{client: "trb-c-" + id, attacker: "trb-a-" + id, server: "trb-s-" + id}
	for _, ns := range []string{n.client, n.attacker, n.server} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			tb.Skipf("skipping: cannot create network namespace %s: %v: %s", ns, err, out)
		}
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	c, a, s := n.client, n.attacker, n.server
	ipCmds(tb,
		"-n "+c+" link add br0 address "+macClient+" type bridge stp_state 0 forward_delay 0",
		"link add cs0 netns "+c+" type veth peer name "+serverIf+" netns "+s+" address "+macServer,
		"link add ca0 netns "+c+" type veth peer name "+attackIf+" netns "+a+" address "+macAttack,
		"-n "+c+" link set cs0 master br0",
		"-n "+c+" link set ca0 master br0",
	)
	for _, d := range []struct {
		ns, dev string
		ip      netip.Addr
		up      []string
	}{
		{c, "br0", ipClient, []string{"cs0", "ca0", "br0"}},
		{s, serverIf, ipServer, []string{serverIf}},
		{a, attackIf, ipAttacker, []string{attackIf}},
	} {
		for _, l := range d.up {
			// No IPv6 link-local address: no neighbour discovery noise.
			ipCmds(tb, "-n "+d.ns+" link set "+l+" addrgenmode none")
		}
		ipCmds(tb, "-n "+d.ns+" addr add "+d.ip.String()+"/24 dev "+d.dev, "-n "+d.ns+" link set lo up")
		for _, l := range d.up {
			ipCmds(tb, "-n "+d.ns+" link set "+l+" up")
		}
	}
	neigh := func(ns, dev string, ip netip.Addr, mac string) string {
		return "-n " + ns + " neigh replace " + ip.String() + " lladdr " + mac + " dev " + dev + " nud permanent"
	}
	ipCmds(tb,
		neigh(c, "br0", ipServer, macServer), neigh(c, "br0", ipAttacker, macAttack),
		neigh(s, serverIf, ipClient, macClient), neigh(s, serverIf, ipAttacker, macAttack),
		neigh(a, attackIf, ipServer, macServer), neigh(a, attackIf, ipClient, macClient),
		// Retries to spoofed sources go to the attacker, which drops them.
		"-n "+s+" route add "+spoofNet.String()+" via "+ipAttacker.String(),
	)
	// Senders complete UDP checksums as a real NIC would: a frame that the
	// XDP program passes on carries no checksum-offload state.
	must(tb, n.in(c, func() error {
		for _, d := range []string{"br0", "cs0", "ca0"} {
			if err := txChecksumOff(d); err != nil {
				return err
			}
		}
		return nil
	}))
	must(tb, n.in(a, func() error { return txChecksumOff(attackIf) }))
	for _, w := range [][2]string{{c, "br0"}, {c, "cs0"}, {c, "ca0"}, {s, serverIf}, {a, attackIf}} {
		waitUp(tb, w[0], w[1])
	}
	return n
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// waitUp waits until dev reports carrier: a veth drops what it is given
// before that.
func waitUp(tb testing.TB, ns, dev string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", dev).CombinedOutput()
		if err != nil {
			tb.Fatalf("ip link show %s: %v: %s", dev, err, out)
		}
		if strings.Contains(string(out), "state UP") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s in %s never came up: %s", dev, ns, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// txChecksumOff is "ethtool -K dev tx off" (ETHTOOL_STXCSUM) in the
// calling thread's namespace.
func txChecksumOff(dev string) error {
	const ethtoolSTXCSUM = 0x17
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	val := &struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = uintptr(unsafe.Pointer(val))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(val)
	if errno != 0 {
		return fmt.Errorf("ethtool tx off %s: %w", dev, errno)
	}
	return nil
}

// in runs fn on the calling goroutine's thread switched into namespace
// ns; sockets fn creates stay there. The thread switches back afterwards,
// or, failing that, stays locked so the runtime retires it.
func (n *benchNet) in(ns string, fn func() error) error {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	defer func() {
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}
