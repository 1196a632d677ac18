package simnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
)

func pair(t *testing.T, n *Network) (a, b *Conn) {
	t.Helper()
	a, err := n.Listen(netip.AddrPortFrom(addrA, 1000))
	if err != nil {
		t.Fatal(err)
	}
	b, err = n.Listen(netip.AddrPortFrom(addrB, 2000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// recvAll reads until nothing more arrives within quiet, returning the
// first byte of each datagram and its arrival time after start.
func recvAll(t *testing.T, c *Conn, start time.Time, quiet time.Duration) (ids []byte, at []time.Duration) {
	t.Helper()
	buf := make([]byte, 2048)
	for {
		_ = c.SetReadDeadline(time.Now().Add(quiet))
		n, _, err := c.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ids, at
		}
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			ids = append(ids, buf[0])
		}
		at = append(at, time.Since(start))
	}
}

func sendN(t *testing.T, c *Conn, to *Conn, n, size int) {
	t.Helper()
	for i := range n {
		b := make([]byte, size)
		b[0] = byte(i)
		if _, err := c.WriteTo(b, to.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1, LinkConfig{Delay: 10 * time.Millisecond})
		a, b := pair(t, n)
		start := time.Now()
		sendN(t, a, b, 3, 100)
		ids, at := recvAll(t, b, start, time.Second)
		if !slices.Equal(ids, []byte{0, 1, 2}) {
			t.Fatalf("received %v", ids)
		}
		for _, d := range at {
			if d != 10*time.Millisecond {
				t.Fatalf("arrival after %v, want 10ms", d)
			}
		}
	})
}

// TestLossDeterministic: the same seed drops the same datagrams, another
// seed other ones, at about the configured rate.
func TestLossDeterministic(t *testing.T) {
	run := func(seed uint64) []byte {
		var ids []byte
		synctest.Test(t, func(t *testing.T) {
			n := New(seed, LinkConfig{Loss: 0.3})
			a, b := pair(t, n)
			sendN(t, a, b, 200, 10)
			ids, _ = recvAll(t, b, time.Now(), time.Millisecond)
			if st := n.Stats(); st.Lost+len(ids) != 200 || st.Lost != 200-len(ids) {
				t.Errorf("stats %+v for %d received", st, len(ids))
			}
		})
		return ids
	}
	first, again, other := run(7), run(7), run(8)
	if !slices.Equal(first, again) {
		t.Error("the same seed lost different datagrams")
	}
	if slices.Equal(first, other) {
		t.Error("another seed lost the same datagrams")
	}
	if l := 200 - len(first); l < 30 || l > 90 {
		t.Errorf("%d of 200 lost at a 30%% loss rate", l)
	}
}

func TestMTU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1, LinkConfig{MTU: 1300})
		a, b := pair(t, n)
		for _, size := range []int{1300, 1301, 1200} {
			if _, err := a.WriteTo(make([]byte, size), b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
		}
		_, at := recvAll(t, b, time.Now(), time.Millisecond)
		if len(at) != 2 || n.Stats().TooBig != 1 {
			t.Fatalf("%d delivered, stats %+v; want the 1301-byte datagram dropped", len(at), n.Stats())
		}
	})
}

func TestReorderAndDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(3, LinkConfig{Delay: time.Millisecond, Reorder: 0.2, Duplicate: 0.1})
		a, b := pair(t, n)
		sendN(t, a, b, 100, 10)
		ids, _ := recvAll(t, b, time.Now(), 10*time.Millisecond)
		st := n.Stats()
		if st.Reordered == 0 || st.Duplicated == 0 || len(ids) != 100+st.Duplicated {
			t.Fatalf("stats %+v, %d received", st, len(ids))
		}
		if slices.IsSorted(ids) {
			t.Fatal("nothing was overtaken")
		}
		seen := map[byte]bool{}
		for _, id := range ids {
			seen[id] = true
		}
		if len(seen) != 100 {
			t.Fatalf("%d distinct datagrams of 100", len(seen))
		}
	})
}

// TestBandwidth: 10 datagrams of 1000 bytes on a 100 kB/s link take 10 ms
// each to send; the queue bound drops what would wait longer than 35 ms.
func TestBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1, LinkConfig{Bandwidth: 100_000, QueueDelay: 35 * time.Millisecond})
		a, b := pair(t, n)
		start := time.Now()
		sendN(t, a, b, 10, 1000)
		_, at := recvAll(t, b, start, time.Second)
		want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}
		if !slices.Equal(at, want) || n.Stats().QueueDrops != 6 {
			t.Fatalf("arrivals %v, stats %+v; want %v and 6 queue drops", at, n.Stats(), want)
		}
	})
}

func TestDeadlineAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1, LinkConfig{})
		a, b := pair(t, n)
		start := time.Now()
		_ = a.SetReadDeadline(start.Add(time.Second))
		_, _, err := a.ReadFrom(make([]byte, 10))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) != time.Second {
			t.Fatalf("read: %v after %v", err, time.Since(start))
		}
		_ = a.SetReadDeadline(time.Time{})
		errc := make(chan error)
		go func() {
			_, _, err := a.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait()
		// A deadline set while a read waits ends that read.
		_ = a.SetReadDeadline(time.Now())
		if err := <-errc; !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read after a new deadline: %v", err)
		}
		_ = a.SetReadDeadline(time.Time{})
		go func() {
			_, _, err := a.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait()
		a.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after Close: %v", err)
		}
		if _, err := a.WriteTo([]byte{1}, b.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after Close: %v", err)
		}
		if _, err := b.WriteTo([]byte{1}, a.LocalAddr()); err != nil || n.Stats().NoRoute != 1 {
			t.Fatalf("write to a closed endpoint: %v, stats %+v", err, n.Stats())
		}
		// The address is free again.
		if c, err := n.Listen(a.AddrPort()); err != nil {
			t.Fatal(err)
		} else {
			c.Close()
		}
	})
}

// TestRebindFilterInject: a rebound endpoint sends from its new address
// and is reached at both; the filter sees and may drop datagrams; Inject
// delivers from an address nobody holds.
func TestRebindFilterInject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(1, LinkConfig{Delay: time.Millisecond})
		a, b := pair(t, n)
		old := a.AddrPort()
		moved := netip.AddrPortFrom(addrA, 1001)
		if err := a.Rebind(moved); err != nil {
			t.Fatal(err)
		}
		if err := b.Rebind(moved); err == nil {
			t.Fatal("rebound to another endpoint's address")
		}
		var seen []Packet
		n.SetFilter(func(p *Packet) bool {
			seen = append(seen, *p)
			return p.Data[0] != 9
		})
		_, _ = a.WriteTo([]byte{1}, b.LocalAddr())
		_, _ = a.WriteTo([]byte{9}, b.LocalAddr())
		buf := make([]byte, 10)
		_, from, err := b.ReadFrom(buf)
		if err != nil || from.String() != moved.String() {
			t.Fatalf("from %v (%v), want %v", from, err, moved)
		}
		if len(seen) != 2 || n.Stats().Filtered != 1 {
			t.Fatalf("filter saw %d, stats %+v", len(seen), n.Stats())
		}
		for _, to := range []netip.AddrPort{old, moved} {
			_, _ = b.WriteTo([]byte{2}, net.UDPAddrFromAddrPort(to))
			if _, _, err := a.ReadFrom(buf); err != nil {
				t.Fatal(err)
			}
		}
		attacker := netip.MustParseAddrPort("198.18.9.9:53")
		start := time.Now()
		n.Inject(Packet{From: attacker, To: b.AddrPort(), Data: []byte{3}}, 5*time.Millisecond)
		_, from, err = b.ReadFrom(buf)
		if err != nil || from.String() != attacker.String() || buf[0] != 3 || time.Since(start) != 5*time.Millisecond {
			t.Fatalf("injected datagram: %v from %v after %v", err, from, time.Since(start))
		}
	})
}
