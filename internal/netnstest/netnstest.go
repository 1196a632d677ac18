//go:build linux

// Package netnstest is for tests only: it builds throwaway network
// namespaces joined by veth pairs, so test traffic never leaves the
// machine. Up assigns addresses only from the benchmarking range
// 198.18.0.0/15 (it fails the test otherwise); every namespace New creates
// is deleted by t.Cleanup, and the veths, addresses and routes in it with
// it. It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for setns) and
// iproute2's ip; RequireRoot skips a test where either is missing.
package netnstest

import (
	"errors"
	"fmt"
	"io/fs"
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

var seq atomic.Int32

// benchRange is RFC 2544's benchmarking range, the only one Up assigns.
var benchRange = netip.MustParsePrefix("198.18.0.0/15")

// RequireRoot skips the test unless it runs as root with ip (iproute2)
// on PATH; why says what needs root, for the skip message.
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("skipping: %s needs root", why)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("skipping: needs ip (iproute2) to create network namespaces")
	}
}

// RequireAFXDP skips the test on a kernel without AF_XDP sockets.
func RequireAFXDP(tb testing.TB) {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		tb.Skip("skipping: kernel without AF_XDP (EAFNOSUPPORT)")
	}
	if err == nil {
		unix.Close(fd)
	}
}

// New creates a network namespace named prefix plus a suffix unique to
// this process and call, skipping the test if the kernel refuses, and
// registers its deletion with tb.Cleanup.
func New(tb testing.TB, prefix string) string {
	tb.Helper()
	ns := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		tb.Skipf("skipping: cannot create network namespace %s: %v: %s", ns, err, out)
	}
	tb.Cleanup(func() { Del(tb, ns) })
	return ns
}

// Del deletes the namespace ns, and its links with it, unless it is gone
// already; a test may call it before the Cleanup New registered does.
func Del(tb testing.TB, ns string) {
	tb.Helper()
	if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, fs.ErrNotExist) {
		return
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		tb.Errorf("ip netns del %s: %v: %s", ns, err, out)
	}
}

// IP runs ip with args and fails the test if it fails.
func IP(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// End is one end of a veth pair: its namespace, name and optional MAC
// address ("" lets the kernel choose).
type End struct{ NS, Dev, MAC string }

// Veth creates a veth pair between a and b; extra (such as "numrxqueues",
// "2") is given to both ends.
func Veth(tb testing.TB, a, b End, extra ...string) {
	tb.Helper()
	end := func(e End) []string {
		s := append([]string{e.Dev, "netns", e.NS}, extra...)
		if e.MAC != "" {
			s = append(s, "address", e.MAC)
		}
		return s
	}
	args := append([]string{"link", "add"}, end(a)...)
	args = append(append(args, "type", "veth", "peer", "name"), end(b)...)
	IP(tb, args...)
}

// Up gives dev in ns the address prefix (none for the zero Prefix; it must
// lie in 198.18.0.0/15) and brings dev and lo up, without an IPv6
// link-local address on dev (so no neighbour discovery chatter).
func Up(tb testing.TB, ns, dev string, prefix netip.Prefix) {
	tb.Helper()
	if prefix.IsValid() && !benchRange.Contains(prefix.Addr()) {
		tb.Fatalf("netnstest: %v is outside %v", prefix, benchRange)
	}
	IP(tb, "-n", ns, "link", "set", dev, "addrgenmode", "none")
	if prefix.IsValid() {
		IP(tb, "-n", ns, "addr", "add", prefix.String(), "dev", dev)
	}
	IP(tb, "-n", ns, "link", "set", "lo", "up")
	IP(tb, "-n", ns, "link", "set", dev, "up")
}

// Neigh adds a permanent neighbour entry ip -> mac on dev in ns.
func Neigh(tb testing.TB, ns, dev string, ip netip.Addr, mac string) {
	tb.Helper()
	IP(tb, "-n", ns, "neigh", "replace", ip.String(), "lladdr", mac, "dev", dev, "nud", "permanent")
}

// WaitUp waits until dev in ns is operationally up. Until linkwatch
// (deferred work, rate limited to once a second) has seen the carrier, a
// device sends through noop_qdisc, which drops everything.
func WaitUp(tb testing.TB, ns, dev string) {
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

// TXChecksumOff is "ethtool -K dev tx off" (the legacy ETHTOOL_STXCSUM
// ioctl, so no ethtool binary) in the calling thread's namespace: the
// kernel then writes complete UDP checksums, as a real NIC would.
func TXChecksumOff(dev string) error {
	const ethtoolSTXCSUM = 0x17
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	val := &struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM}
	// struct ifreq: the name, then ifr_data pointing at struct ethtool_value.
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(val)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(val)
	if errno != 0 {
		return fmt.Errorf("ethtool tx off %s: %w", dev, errno)
	}
	return nil
}

// In runs fn on the calling goroutine's thread switched into namespace
// ns; sockets fn creates stay there, and using them afterwards needs no
// switch. The thread switches back afterwards (also when fn panics or
// calls runtime.Goexit) or, failing that, stays locked so the runtime
// retires it with the goroutine.
func In(ns string, fn func() error) error {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own netns: %w", err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open netns %s: %w", ns, err)
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

// UDPSocket opens a blocking IPv4 UDP socket in the calling thread's
// namespace, bound to local and, when remote is valid, connected to it,
// with a forced 8 MiB receive buffer (beyond rmem_max, so a burst does not
// overflow it) and reads timing out after timeout, so a lost datagram
// fails instead of hanging. tb.Cleanup closes it.
func UDPSocket(tb testing.TB, local, remote netip.AddrPort, timeout time.Duration) int {
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

// ReadUDP reads one datagram from a socket made by UDPSocket, retrying when
// a signal (the runtime's preemption signal among them) interrupts it: with
// SO_RCVTIMEO set, the kernel does not restart the read by itself.
func ReadUDP(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}
