//go:build linux

package afxdp

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	portA = 9000
	portB = 9001
	// waitLimit bounds every wait so a lost packet fails the test instead of
	// hanging it; it is never asserted on.
	waitLimit = 5 * time.Second
)

func rxPayload(i int) []byte {
	return []byte(fmt.Sprintf("afxdp rx %04d %s", i, bytes.Repeat([]byte{byte(i)}, i%200)))
}
func txPayload(i int) []byte {
	return []byte(fmt.Sprintf("afxdp tx %04d %s", i, bytes.Repeat([]byte{^byte(i)}, i%300)))
}

// receiveN reads frames until n UDP datagrams to portB arrived, passing each
// parsed one to check, and fails when a wait runs out first.
func receiveN(t *testing.T, nt *testNet, s *Socket, n int, check func(f *frame.UDP)) {
	t.Helper()
	batch := make([]Desc, 64)
	got, other := 0, 0
	for got < n {
		k := s.Receive(batch)
		if k == 0 {
			r, err := s.WaitTimeout(waitLimit, Readable)
			if err != nil {
				t.Fatal(err)
			}
			if r&Readable == 0 {
				st, _ := s.Stats()
				nt.dump(t)
				t.Fatalf("received %d of %d datagrams (%d other frames); stats %+v", got, n, other, st)
			}
			continue
		}
		for _, d := range batch[:k] {
			f, err := frame.Parse(s.Frame(d))
			if err != nil || f.DstPort != portB {
				other++
				t.Logf("other frame (%v): %x", err, s.Frame(d))
				continue
			}
			check(&f)
			got++
		}
		s.Release(batch[:k])
	}
}

// TestReceiveAndTransmit runs the RX and TX round trip with the redirect
// program attached in native and in generic (SKB) mode.
func TestReceiveAndTransmit(t *testing.T) {
	for _, m := range attachModes {
		t.Run(m.name, func(t *testing.T) { testReceiveAndTransmit(t, m.name) })
	}
}

func testReceiveAndTransmit(t *testing.T, mode string) {
	e := newXSKEnv(t, smallConfig, mode)
	t.Logf("XDP attached in %s mode; AF_XDP zero-copy: %v", e.mode, e.xsk.ZeroCopy())
	const n = 100

	var fdA int
	e.in(t, e.nsA, func() {
		fdA = udpSocket(t, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
	})

	// A -> B: a normal UDP socket sends, AF_XDP receives.
	for i := range n {
		if _, err := unix.Write(fdA, rxPayload(i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	seen := make([]bool, n)
	receiveN(t, e.testNet, e.xsk, n, func(f *frame.UDP) {
		var i int
		if _, err := fmt.Sscanf(string(f.Payload), "afxdp rx %04d", &i); err != nil || i < 0 || i >= n {
			t.Fatalf("unexpected payload %q", f.Payload)
		}
		if !bytes.Equal(f.Payload, rxPayload(i)) || seen[i] {
			t.Fatalf("datagram %d: duplicate or wrong content %q", i, f.Payload)
		}
		seen[i] = true
		if f.SrcIP != ipA || f.DstIP != ipB || f.SrcPort != portA || f.Src != macA || f.Dst != macB {
			t.Fatalf("datagram %d: headers %v:%d %x -> %v:%d %x", i, f.SrcIP, f.SrcPort, f.Src, f.DstIP, f.DstPort, f.Dst)
		}
	})

	// B -> A: frames built here go out through AF_XDP TX; A's kernel
	// accepts them only with correct IPv4 and UDP checksums.
	pending := make([]Desc, 0, n)
	for i := range n {
		d, ok := e.xsk.AllocFrame()
		if !ok {
			t.Fatalf("AllocFrame %d: no free frame", i)
		}
		buf := e.xsk.Frame(d)
		f := frame.UDP{Dst: macA, Src: macB, SrcIP: ipB, DstIP: ipA, SrcPort: portB, DstPort: portA, Payload: txPayload(i)}
		l, err := f.Encode(buf[:cap(buf)])
		if err != nil {
			t.Fatal(err)
		}
		d.Len = uint32(l)
		pending = append(pending, d)
	}
	for len(pending) > 0 {
		k, err := e.xsk.Transmit(pending)
		if err != nil {
			t.Fatal(err)
		}
		pending = pending[k:]
		if k == 0 {
			if _, err := e.xsk.WaitTimeout(waitLimit, Writable); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen = make([]bool, n)
	buf := make([]byte, 2048)
	for range n {
		k, err := readUDP(fdA, buf)
		if err != nil {
			st, _ := e.xsk.Stats()
			t.Fatalf("read in A: %v (stats %+v, pending %d; tx %d/%d comp %d flags %x)", err, st, e.xsk.Pending(), *e.xsk.tx.producer, *e.xsk.tx.consumer, *e.xsk.comp.producer, *e.xsk.tx.flags)
		}
		var i int
		if _, err := fmt.Sscanf(string(buf[:k]), "afxdp tx %04d", &i); err != nil || i < 0 || i >= n || seen[i] || !bytes.Equal(buf[:k], txPayload(i)) {
			t.Fatalf("unexpected or duplicate datagram in A: %q", buf[:k])
		}
		seen[i] = true
	}
	// Every transmitted frame comes back through the completion ring.
	for tries := 0; e.xsk.Pending() > 0; tries++ {
		if tries > 1000 {
			t.Fatalf("%d frames never completed", e.xsk.Pending())
		}
		e.xsk.Complete()
		if e.xsk.Pending() > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	st, err := e.xsk.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TXInvalidDescs != 0 || st.RXInvalidDescs != 0 {
		t.Fatalf("kernel rejected descriptors: %+v", st)
	}
}

// TestForwardInPlace sends received frames back out through TX after
// rewriting them in place, as the Retry agent does.
func TestForwardInPlace(t *testing.T) {
	e := newXSKEnv(t, smallConfig)
	const n = 50
	var fdA int
	e.in(t, e.nsA, func() {
		fdA = udpSocket(t, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
	})
	for i := range n {
		if _, err := unix.Write(fdA, rxPayload(i)); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([]Desc, n)
	got := 0
	for got < n {
		k := e.xsk.Receive(batch[got:])
		if k == 0 {
			if r, err := e.xsk.WaitTimeout(waitLimit, Readable); err != nil || r == 0 {
				t.Fatalf("received %d of %d (%v)", got, n, err)
			}
		}
		got += k
	}
	for i, d := range batch {
		buf := e.xsk.Frame(d)
		f, err := frame.Parse(buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		// Swap the endpoints; the payload stays where it is.
		f.Src, f.Dst = f.Dst, f.Src
		f.SrcIP, f.DstIP = f.DstIP, f.SrcIP
		f.SrcPort, f.DstPort = f.DstPort, f.SrcPort
		l, err := f.Encode(buf[:cap(buf)])
		if err != nil {
			t.Fatal(err)
		}
		batch[i].Len = uint32(l)
	}
	for sent := 0; sent < n; {
		k, err := e.xsk.Transmit(batch[sent:])
		if err != nil {
			t.Fatal(err)
		}
		sent += k
	}
	buf := make([]byte, 2048)
	seen := make([]bool, n)
	for range n {
		k, err := readUDP(fdA, buf)
		if err != nil {
			t.Fatalf("read echoed datagram: %v", err)
		}
		var i int
		if _, err := fmt.Sscanf(string(buf[:k]), "afxdp rx %04d", &i); err != nil || i < 0 || i >= n || seen[i] || !bytes.Equal(buf[:k], rxPayload(i)) {
			t.Fatalf("unexpected echo %q", buf[:k])
		}
		seen[i] = true
	}
	// The frames, once completed, refill reception: another round works.
	for e.xsk.Pending() > 0 {
		e.xsk.Complete()
		if e.xsk.Pending() > 0 {
			_, _ = e.xsk.WaitTimeout(time.Millisecond, Writable)
		}
	}
	if _, err := unix.Write(fdA, rxPayload(7)); err != nil {
		t.Fatal(err)
	}
	receiveN(t, e.testNet, e.xsk, 1, func(f *frame.UDP) {
		if !bytes.Equal(f.Payload, rxPayload(7)) {
			t.Fatalf("payload %q", f.Payload)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	nt := newTestNet(t, 2)
	nt.in(t, nt.nsB, func() {
		if _, err := Open(nt.ifB, 5, smallConfig); !errors.Is(err, ErrQueueRange) {
			t.Errorf("queue 5 of 2: got %v, want ErrQueueRange", err)
		}
		if _, err := Open(nt.ifB, -1, smallConfig); !errors.Is(err, ErrQueueRange) {
			t.Errorf("queue -1: got %v, want ErrQueueRange", err)
		}
		if _, err := Open(99999, 0, smallConfig); !errors.Is(err, ErrNoInterface) {
			t.Errorf("ifindex 99999: got %v, want ErrNoInterface", err)
		}
		if _, err := OpenByName("nonexistent0", 0, smallConfig); !errors.Is(err, ErrNoInterface) {
			t.Errorf("nonexistent0: got %v, want ErrNoInterface", err)
		}
		// veth has no zero-copy AF_XDP: forcing it fails, auto falls back.
		if s, err := Open(nt.ifB, 0, Config{Mode: ModeZeroCopy}); err == nil {
			t.Logf("this kernel binds veth in zero-copy mode: %v", s.ZeroCopy())
			s.Close()
		} else if !errors.Is(err, ErrNotSupported) {
			t.Errorf("forced zero-copy on veth: got %v, want ErrNotSupported", err)
		}
		if _, err := Open(nt.ifB, 0, Config{FrameSize: 1000}); !errors.Is(err, ErrConfig) {
			t.Errorf("frame size 1000: got %v, want ErrConfig", err)
		}
		// Fewer active channels than allocated queues: NumQueues
		// follows the driver's channels, not the allocation.
		var ch ethtoolChannels
		if err := ethtoolChannelsOf(nt.ifB, unix.ETHTOOL_GCHANNELS, &ch); err != nil {
			t.Logf("veth reports no channels here (%v): only the rtnetlink fallback is tested", err)
		} else {
			ch.rxCount = 1
			if err := ethtoolChannelsOf(nt.ifB, unix.ETHTOOL_SCHANNELS, &ch); err != nil {
				t.Logf("veth channels cannot be changed here: %v", err)
			} else {
				if q, err := NumQueues(nt.ifB); err != nil || q != 1 {
					t.Errorf("NumQueues with 1 active of 2 receive queues = %d, %v; want 1", q, err)
				}
				ch.rxCount = 2
				if err := ethtoolChannelsOf(nt.ifB, unix.ETHTOOL_SCHANNELS, &ch); err != nil {
					t.Fatalf("restoring 2 channels: %v", err)
				}
			}
		}
		s, err := Open(nt.ifB, 1, smallConfig)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := Open(nt.ifB, 1, smallConfig); !errors.Is(err, ErrBusy) {
			t.Errorf("second socket on queue 1: got %v, want ErrBusy", err)
		}
		if q, err := NumQueues(nt.ifB); err != nil || q != 2 {
			t.Errorf("NumQueues = %d, %v; want 2", q, err)
		}
		if _, err := NumQueues(99999); !errors.Is(err, ErrNoInterface) {
			t.Errorf("NumQueues(99999): got %v, want ErrNoInterface", err)
		}
	})
}
