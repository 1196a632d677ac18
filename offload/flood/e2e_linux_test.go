package flood

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/netnstest"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/frame"
)

// listenCounter binds a UDP socket with a large receive buffer (forced when
// root, so the kernel does not drop the burst) and returns it.
func listenCounter(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<20)
		}
	})
	return c
}

// receive reads until want datagrams arrived or no datagram came for the
// guard interval (a hang guard, not a speed check), checking each with fn.
func receive(t *testing.T, c *net.UDPConn, want int, fn func(from netip.AddrPort, p []byte) error) int {
	t.Helper()
	buf := make([]byte, 2048)
	got := 0
	for got < want {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			t.Fatal(err)
		}
		if err := fn(from, buf[:n]); err != nil {
			t.Fatalf("datagram %d from %v: %v", got, from, err)
		}
		got++
	}
	return got
}

func TestLoopbackFlood(t *testing.T) {
	loopbackFlood(t, "127.0.0.1:0", 2000)
}

func TestLoopbackFloodIPv6(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("skipping: no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	loopbackFlood(t, "[::1]:0", 300)
}

func loopbackFlood(t *testing.T, addr string, count uint64) {
	rx := listenCounter(t, addr)
	target := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	s, err := NewUDPSender(target, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gen, err := NewGenerator(GeneratorConfig{PoolSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := Run(context.Background(), RunConfig{Count: count, Duration: time.Minute, Rate: 100000, Batch: 32}, gen, s)
		done <- result{st, err}
	}()
	dcids := map[string]bool{}
	got := receive(t, rx, int(count), func(from netip.AddrPort, p []byte) error {
		if from != s.LocalAddr() {
			return fmt.Errorf("unexpected source %v", from)
		}
		if len(p) != UDPPayloadSize {
			return fmt.Errorf("%d bytes", len(p))
		}
		o, err := OpenInitial(p)
		if err != nil {
			return err
		}
		dcids[string(o.DCID)] = true
		return nil
	})
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.st.Sent != count || r.st.Errors != 0 || uint64(got) != count {
		t.Fatalf("sent %d (errors %d, %s), received %d, want %d", r.st.Sent, r.st.Errors, r.st.FirstError, got, count)
	}
	if len(dcids) != 64 {
		t.Fatalf("%d distinct DCIDs, want the pool's 64", len(dcids))
	}
}

// netnsPair creates two network namespaces joined by a veth pair:
// A (vA, 10.77.0.1, MAC 02:00:00:00:77:01) and B (vB, 10.77.0.2,
// 02:00:00:00:77:02), with reverse-path filtering off in B and a route
// back to the spoof range, so spoofed frames are delivered.
func netnsPair(t *testing.T) (nsA, nsB string) {
	t.Helper()
	netnstest.RequireRoot(t, "creating network namespaces")
	nsA, nsB = netnstest.New(t, "trflood-a"), netnstest.New(t, "trflood-b")
	netnstest.Veth(t, netnstest.End{NS: nsA, Dev: "vA", MAC: "02:00:00:00:77:01"}, netnstest.End{NS: nsB, Dev: "vB", MAC: "02:00:00:00:77:02"})
	netnstest.IP(t, "-n", nsA, "addr", "add", "10.77.0.1/24", "dev", "vA")
	netnstest.IP(t, "-n", nsB, "addr", "add", "10.77.0.2/24", "dev", "vB")
	for _, c := range [][2]string{{nsA, "vA"}, {nsB, "vB"}} {
		netnstest.IP(t, "-n", c[0], "link", "set", c[1], "up")
		netnstest.IP(t, "-n", c[0], "link", "set", "lo", "up")
	}
	netnstest.IP(t, "-n", nsB, "route", "add", "198.18.0.0/15", "dev", "vB")
	netnstest.IP(t, "netns", "exec", nsB, "sh", "-c", "for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done")
	return nsA, nsB
}

func TestSpoofedFloodInNamespaces(t *testing.T) {
	nsA, nsB := netnsPair(t)
	var rx *net.UDPConn
	if err := netnstest.In(nsB, func() error {
		rx = listenCounter(t, "10.77.0.2:4433")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var ps *PacketSender
	var us *UDPSender
	if err := netnstest.In(nsA, func() error {
		var err error
		if ps, err = NewPacketSender("vA", 16); err != nil {
			return err
		}
		// Inside a namespace a non-loopback target is allowed too.
		us, err = NewUDPSender(netip.MustParseAddrPort("10.77.0.2:4433"), 16)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	defer us.Close()

	gen, err := NewGenerator(GeneratorConfig{PoolSize: 16, Version: 0x6b3343cf})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := NewFrameSource(gen, FrameConfig{
		Target: netip.MustParseAddrPort("10.77.0.2:4433"),
		SrcMAC: ps.HardwareAddr(),
		DstMAC: net.HardwareAddr{2, 0, 0, 0, 0x77, 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	const count = 300
	st, err := Run(context.Background(), RunConfig{Count: count, Duration: time.Minute, Rate: 20000, Batch: 16}, fs, ps)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != count {
		t.Fatalf("raw sender: %+v", st)
	}
	sources := map[netip.Addr]bool{}
	got := receive(t, rx, count, func(from netip.AddrPort, p []byte) error {
		if !SpoofRange.Contains(from.Addr()) {
			return fmt.Errorf("source %v is not spoofed from %v", from, SpoofRange)
		}
		sources[from.Addr()] = true
		_, err := OpenInitial(p)
		return err
	})
	if got != count {
		t.Fatalf("received %d of %d spoofed datagrams", got, count)
	}
	if len(sources) < count/2 {
		t.Fatalf("only %d distinct spoofed sources", len(sources))
	}

	// The plain UDP path into the namespace arrives from A's real address.
	st, err = Run(context.Background(), RunConfig{Count: 50, Duration: time.Minute, Rate: 20000}, gen, us)
	if err != nil || st.Sent != 50 {
		t.Fatalf("UDP sender: %+v %v", st, err)
	}
	got = receive(t, rx, 50, func(from netip.AddrPort, p []byte) error {
		if from.Addr() != netip.MustParseAddr("10.77.0.1") {
			return fmt.Errorf("source %v", from)
		}
		_, err := OpenInitial(p)
		return err
	})
	if got != 50 {
		t.Fatalf("received %d of 50 UDP datagrams", got)
	}
}

// TestPacketSenderRefusesUnsafeFrames checks the last line of defence: a
// frame whose source is outside 198.18.0.0/15 never reaches the kernel.
func TestPacketSenderRefusesUnsafeFrames(t *testing.T) {
	nsA, _ := netnsPair(t)
	var ps *PacketSender
	if err := netnstest.In(nsA, func() error {
		var err error
		ps, err = NewPacketSender("vA", 4)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	frame := func(src string) []byte {
		f := frame.UDP{
			Dst: frame.MAC{2, 0, 0, 0, 0, 2}, Src: frame.MAC{2, 0, 0, 0, 0, 1},
			SrcIP: netip.MustParseAddr(src), DstIP: netip.MustParseAddr("10.0.0.2"),
			SrcPort: 40000, DstPort: 4433, Payload: make([]byte, 100),
		}
		b := make([]byte, f.Len())
		if _, err := f.Encode(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	good, bad := frame("198.18.3.4"), frame("10.77.0.1")
	n, err := ps.Send([][]byte{good, bad, good})
	if n != 1 || !errors.Is(err, ErrUnsafeFrame) {
		t.Fatalf("sent %d, err %v; want 1 and ErrUnsafeFrame", n, err)
	}
	if n, err := ps.Send([][]byte{{1, 2, 3}}); n != 0 || !errors.Is(err, ErrUnsafeFrame) {
		t.Fatalf("short frame: %d %v", n, err)
	}
}
