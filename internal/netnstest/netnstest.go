//go:build linux

// Package netnstest is for tests only: it builds throwaway network
// namespaces joined by veth pairs, so test traffic never leaves the
// machine. Up assigns addresses only from the benchmarking range
// 198.18.0.0/15 (it fails the test otherwise); every namespace New creates
// is deleted by t.Cleanup, and the veths, addresses and routes in it with
// it. It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for setns) and
// iproute2's ip; RequireRoot skips a test where either is missing. The
// namespace work itself is internal/netns's, which the evaluation uses too.
package netnstest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/internal/netns"
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
	if err := netns.Add(ns); err != nil {
		tb.Skipf("skipping: cannot create network namespace %s: %v", ns, err)
	}
	tb.Cleanup(func() { Del(tb, ns) })
	return ns
}

// Del deletes the namespace ns, and its links with it, unless it is gone
// already; a test may call it before the Cleanup New registered does.
func Del(tb testing.TB, ns string) {
	tb.Helper()
	if err := netns.Del(ns); err != nil {
		tb.Error(err)
	}
}

// IP runs ip with args and fails the test if it fails.
func IP(tb testing.TB, args ...string) {
	tb.Helper()
	if err := netns.IP(args...); err != nil {
		tb.Fatal(err)
	}
}

// End is one end of a veth pair: its namespace, name and optional MAC
// address ("" lets the kernel choose).
type End = netns.End

// Veth creates a veth pair between a and b; extra (such as "numrxqueues",
// "2") is given to both ends.
func Veth(tb testing.TB, a, b End, extra ...string) {
	tb.Helper()
	if err := netns.Veth(a, b, extra...); err != nil {
		tb.Fatal(err)
	}
}

// Up gives dev in ns the address prefix (none for the zero Prefix; it must
// lie in 198.18.0.0/15) and brings dev and lo up, without an IPv6
// link-local address on dev (so no neighbour discovery chatter).
func Up(tb testing.TB, ns, dev string, prefix netip.Prefix) {
	tb.Helper()
	if prefix.IsValid() && !benchRange.Contains(prefix.Addr()) {
		tb.Fatalf("netnstest: %v is outside %v", prefix, benchRange)
	}
	if err := netns.Up(ns, dev, prefix); err != nil {
		tb.Fatal(err)
	}
}

// Neigh adds a permanent neighbour entry ip -> mac on dev in ns.
func Neigh(tb testing.TB, ns, dev string, ip netip.Addr, mac string) {
	tb.Helper()
	if err := netns.Neigh(ns, dev, ip, mac); err != nil {
		tb.Fatal(err)
	}
}

// WaitUp waits until dev in ns is operationally up (netns.WaitUp).
func WaitUp(tb testing.TB, ns, dev string) {
	tb.Helper()
	if err := netns.WaitUp(ns, dev, 10*time.Second); err != nil {
		tb.Fatal(err)
	}
}

// TXChecksumOff is "ethtool -K dev tx off" in the calling thread's
// namespace: the kernel then writes complete UDP checksums, as a real NIC
// would.
func TXChecksumOff(dev string) error { return ethtool.SetOffload(dev, ethtool.TXChecksum, false) }

// In runs fn on the calling goroutine's thread switched into namespace ns
// (netns.In); sockets fn creates stay there.
func In(ns string, fn func() error) error { return netns.In(ns, fn) }

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
