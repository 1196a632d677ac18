//go:build eval

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/flood"
)

// floodReceiver binds a UDP socket with a forced large buffer (root) so
// that a burst is not dropped before it is counted.
func floodReceiver(addr string) (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		return nil, err
	}
	if raw, err := c.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) != nil {
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<20)
			}
		})
	}
	return c, nil
}

// floodCount reads datagrams until want arrived or none came for a while
// (a hang guard, not a speed check); each must be a valid Initial whose
// source passes ok.
func floodCount(t *testing.T, c *net.UDPConn, want int, ok func(netip.AddrPort) bool) int {
	t.Helper()
	buf := make([]byte, 2048)
	got := 0
	for got < want {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !ok(from) {
			t.Fatalf("datagram from unexpected source %v", from)
		}
		if _, err := flood.OpenInitial(buf[:n]); err != nil {
			t.Fatalf("datagram %d: %v", got, err)
		}
		got++
	}
	return got
}

func TestFloodLoopback(t *testing.T) {
	rx, err := floodReceiver("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	target := rx.LocalAddr().String()
	code, out, errOut := runCLI("flood", "--target", target, "--count", "300", "--duration", "1m",
		"--rate", "100000", "--version", "2", "--pool", "10", "--dcid-len", "20")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := decodeFloodSummary(t, out)
	if s.Sent != 300 || s.Errors != 0 || s.Mode != "udp" || s.Version != "v2" || s.Pool != 10 || s.Stopped != "count" {
		t.Fatalf("summary %+v", s)
	}
	if got := floodCount(t, rx, 300, func(from netip.AddrPort) bool { return from.Addr().IsLoopback() }); got != 300 {
		t.Fatalf("received %d of 300", got)
	}
}

const floodChildEnv = "TURBORETRY_FLOOD_CHILD_ARGS"

// TestFloodChild is not a test on its own: TestFloodSpoofInNamespace runs
// the test binary inside a namespace with it selected, to run the command
// there as a user would with ip netns exec.
func TestFloodChild(t *testing.T) {
	args := os.Getenv(floodChildEnv)
	if args == "" {
		t.Skip("helper for TestFloodSpoofInNamespace")
	}
	code, out, errOut := runCLI(strings.Split(args, " ")...)
	fmt.Printf("%s\nEXIT=%d\n%s", out, code, errOut)
}

func TestFloodSpoofInNamespace(t *testing.T) {
	netnstest.RequireRoot(t, "creating network namespaces")
	nsA, nsB := netnstest.New(t, "trfloodcli-a"), netnstest.New(t, "trfloodcli-b")
	netnstest.Veth(t, netnstest.End{NS: nsA, Dev: "vA"}, netnstest.End{NS: nsB, Dev: "vB", MAC: "02:00:00:00:78:02"})
	netnstest.IP(t, "-n", nsA, "link", "set", "vA", "up")
	netnstest.IP(t, "-n", nsB, "link", "set", "vB", "up")
	netnstest.IP(t, "-n", nsB, "addr", "add", "10.78.0.2/24", "dev", "vB")
	netnstest.IP(t, "-n", nsB, "route", "add", "198.18.0.0/15", "dev", "vB")
	netnstest.IP(t, "netns", "exec", nsB, "sh", "-c", "for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done")
	// The receiver's socket is opened inside B and stays there.
	var rx *net.UDPConn
	if err := netnstest.In(nsB, func() (err error) {
		rx, err = floodReceiver("10.78.0.2:4433")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	cmd := exec.Command("ip", "netns", "exec", nsA, os.Args[0], "-test.run=^TestFloodChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodChildEnv+"=flood --target 10.78.0.2:4433 --iface vA --spoof=198.19.0.0/16 "+
		"--dst-mac 02:00:00:00:78:02 --count 200 --duration 30s --rate 20000 --reprotect")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil || !strings.Contains(out, "EXIT=0") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := decodeFloodSummary(t, out[:strings.Index(out, "EXIT=")])
	if s.Sent != 200 || s.Mode != "spoof" || s.Spoof != "198.19.0.0/16" || !s.Reprotect {
		t.Fatalf("summary %+v", s)
	}
	spoof := netip.MustParsePrefix("198.19.0.0/16")
	if got := floodCount(t, rx, 200, func(from netip.AddrPort) bool { return spoof.Contains(from.Addr()) }); got != 200 {
		t.Fatalf("received %d of 200 spoofed datagrams", got)
	}
}

// TestFloodLiveInNamespace: --live sends complete Initials (--pool) with
// spoofed sources through the kernel into the veth, and says what the
// peer took.
func TestFloodLiveInNamespace(t *testing.T) {
	netnstest.RequireRoot(t, "creating network namespaces")
	nsA, nsB := netnstest.New(t, "trfloodlive-a"), netnstest.New(t, "trfloodlive-b")
	netnstest.Veth(t, netnstest.End{NS: nsA, Dev: "vA"}, netnstest.End{NS: nsB, Dev: "vB", MAC: "02:00:00:00:79:02"})
	netnstest.Up(t, nsA, "vA", netip.MustParsePrefix("198.18.79.1/24"))
	netnstest.Up(t, nsB, "vB", netip.MustParsePrefix("198.18.79.2/24"))
	// A veth takes redirected frames only with GRO (or XDP) on its peer.
	if err := netnstest.In(nsB, func() error { return ethtool.SetOffload("vB", ethtool.GRO, true) }); err != nil {
		t.Fatal(err)
	}
	netnstest.WaitUp(t, nsA, "vA")
	netnstest.WaitUp(t, nsB, "vB")
	var rx *net.UDPConn
	if err := netnstest.In(nsB, func() (err error) {
		rx, err = floodReceiver("198.18.79.2:4433")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	cmd := exec.Command("ip", "netns", "exec", nsA, os.Args[0], "-test.run=^TestFloodChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodChildEnv+"=flood --target 198.18.79.2:4433 --iface vA --spoof=198.19.0.0/16 "+
		"--dst-mac 02:00:00:00:79:02 --count 300 --duration 30s --rate 20000 --live --pool 8")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil || !strings.Contains(out, "EXIT=0") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := decodeFloodSummary(t, out[:strings.Index(out, "EXIT=")])
	if s.Sent != 300 || s.Mode != "live" || s.LiveMode != "pool" || s.Pool != 8 || s.Delivered == nil || *s.Delivered != 300 || s.CPUS <= 0 {
		t.Fatalf("summary %+v", s)
	}
	spoof := netip.MustParsePrefix("198.19.0.0/16")
	if got := floodCount(t, rx, 300, func(from netip.AddrPort) bool { return spoof.Contains(from.Addr()) }); got != 300 {
		t.Fatalf("received %d of 300 spoofed datagrams", got)
	}
}
