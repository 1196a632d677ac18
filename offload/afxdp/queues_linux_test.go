//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOneSocketPerQueue opens a socket on each of the four queues of a
// veth, registers each in its queue's XSKMAP slot, and receives datagrams of
// 16 flows (which the sender's kernel spreads over its TX queues, and veth
// maps TX queue i to RX queue i) across them: every datagram arrives once.
func TestOneSocketPerQueue(t *testing.T) {
	const queues, flows, perFlow = 4, 16, 8
	nt := newTestNet(t, queues)
	prog, xsks := redirectProgram(t)
	socks := make([]*Socket, queues)
	nt.in(t, nt.nsB, func() {
		if n, err := NumQueues(nt.ifB); err != nil || n != queues {
			t.Fatalf("NumQueues = %d, %v", n, err)
		}
		for q := range socks {
			s, err := Open(nt.ifB, q, smallConfig)
			if err != nil {
				t.Fatalf("Open queue %d: %v", q, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if s.Queue() != q || s.Ifindex() != nt.ifB {
				t.Fatalf("socket reports queue %d ifindex %d", s.Queue(), s.Ifindex())
			}
			if err := s.Register(xsks, uint32(q)); err != nil {
				t.Fatal(err)
			}
			socks[q] = s
		}
		t.Logf("XDP attached in %s mode", attach(t, prog, nt.ifB))
	})
	fds := make([]int, flows)
	nt.in(t, nt.nsA, func() {
		for i := range fds {
			fds[i] = udpSocket(t, netip.AddrPortFrom(ipA, uint16(20000+i)), netip.AddrPortFrom(ipB, portB))
		}
	})
	for j := range perFlow {
		for i, fd := range fds {
			if _, err := unix.Write(fd, []byte(fmt.Sprintf("flow %02d seq %d", i, j))); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]bool{}
	perQueue := make([]int, queues)
	batch := make([]Desc, 32)
	other := 0
	var otherErr error
	for idle := 0; len(seen) < flows*perFlow; {
		got := 0
		for q, s := range socks {
			n := s.Receive(batch)
			for _, d := range batch[:n] {
				f, err := frame.Parse(s.Frame(d))
				if err != nil || f.DstPort != portB {
					other++
					otherErr = err
					continue
				}
				if seen[string(f.Payload)] {
					t.Fatalf("duplicate %q", f.Payload)
				}
				seen[string(f.Payload)] = true
				perQueue[q]++
				got++
			}
			s.Release(batch[:n])
		}
		if got == 0 {
			if idle++; idle > 500 {
				for q, s := range socks {
					st, err := s.Stats()
					t.Logf("queue %d: %+v %v", q, st, err)
				}
				nt.dump(t)
				t.Fatalf("received %d of %d datagrams (per queue %v), %d other frames (last error %v)",
					len(seen), flows*perFlow, perQueue, other, otherErr)
			}
			_, _ = socks[idle%queues].WaitTimeout(10*time.Millisecond, Readable)
		}
	}
	t.Logf("datagrams per queue: %v", perQueue)
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		errno unix.Errno
		want  error
	}{
		{unix.EPERM, ErrPermission}, {unix.EACCES, ErrPermission},
		{unix.EAFNOSUPPORT, ErrNotSupported}, {unix.EOPNOTSUPP, ErrNotSupported},
		{unix.ENODEV, ErrNoInterface}, {unix.EBUSY, ErrBusy},
	} {
		err := classify(c.errno)
		if !errors.Is(err, c.want) || !errors.Is(err, c.errno) {
			t.Errorf("%v: got %v, want %v wrapping the errno", c.errno, err, c.want)
		}
	}
	if err := classify(unix.ENOMEM); err != unix.ENOMEM {
		t.Errorf("ENOMEM: got %v", err)
	}
}
