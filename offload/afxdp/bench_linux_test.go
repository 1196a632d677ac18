//go:build linux

package afxdp

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// benchWindow bounds the datagrams in flight, below every ring and the
// veth's own queue, so the benchmark measures throughput without loss.
const benchWindow = 128

// BenchmarkRX compares packets/s received through AF_XDP (copy mode, veth,
// native XDP redirect) with a plain UDP socket read loop in namespace B, for
// the same sender: a UDP socket in namespace A sending 1200-byte datagrams
// (the size of a QUIC Initial). Only b.N datagrams are sent, inside the
// test's own namespaces.
// mmsghdr is struct mmsghdr (x/sys/unix has no sendmmsg wrapper).
type mmsghdr struct {
	Hdr unix.Msghdr
	Len uint32
}

func BenchmarkRX(b *testing.B) {
	e := newXSKEnv(b, Config{FrameSize: 2048, NumFrames: 4096})
	var fdA, fdB int
	e.in(b, e.nsA, func() {
		fdA = udpSocket(b, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
	})
	e.in(b, e.nsB, func() {
		fdB = udpSocket(b, netip.AddrPortFrom(ipB, portB), netip.AddrPort{})
	})
	payload := make([]byte, 1200)

	// send writes n datagrams from A with sendmmsg, in batches of up to 32,
	// at most benchWindow ahead of the receiver's credits.
	var msgs [32]mmsghdr
	iov := unix.Iovec{Base: &payload[0]}
	iov.SetLen(len(payload))
	for i := range msgs {
		msgs[i].Hdr.Iov = &iov
		msgs[i].Hdr.SetIovlen(1)
	}
	send := func(n int, credits chan struct{}, errc chan<- error) {
		for n > 0 {
			k := min(n, len(msgs))
			for range k {
				<-credits
			}
			for sent := 0; sent < k; {
				r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fdA), uintptr(unsafe.Pointer(&msgs[sent])), uintptr(k-sent), 0, 0, 0)
				if e != 0 {
					errc <- e
					return
				}
				sent += int(r)
			}
			n -= k
		}
		errc <- nil
	}
	run := func(b *testing.B, recv func(credits chan struct{}) int) {
		credits := make(chan struct{}, benchWindow)
		for range benchWindow {
			credits <- struct{}{}
		}
		errc := make(chan error, 1)
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		go send(b.N, credits, errc)
		got := 0
		for got < b.N {
			n := recv(credits)
			if n < 0 {
				select {
				case err := <-errc:
					b.Logf("sender: %v", err)
				default:
				}
				e.dump(b)
				b.Fatalf("received %d of %d datagrams before a %v wait ran out", got, b.N, waitLimit)
			}
			got += n
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pkts/s")
	}

	b.Run("afxdp", func(b *testing.B) {
		s := e.xsk
		batch := make([]Desc, 64)
		run(b, func(credits chan struct{}) int {
			n := s.Receive(batch)
			if n == 0 {
				if r, err := s.WaitTimeout(waitLimit, Readable); err != nil || r == 0 {
					return -1
				}
				return 0
			}
			got := 0
			for _, d := range batch[:n] {
				if len(s.Frame(d)) >= len(payload) {
					got++
					credits <- struct{}{}
				}
			}
			s.Release(batch[:n])
			return got
		})
		b.Logf("AF_XDP zero-copy: %v, XDP %s mode", s.ZeroCopy(), e.mode)
	})

	b.Run("udp-socket", func(b *testing.B) {
		// Without a socket in the XSKMAP slot the program passes packets to
		// the stack, so the same path carries them to a normal socket.
		if err := e.xskMap.Delete(uint32(0)); err != nil {
			b.Fatalf("clear XSKMAP slot: %v", err)
		}
		b.Cleanup(func() { _ = e.xsk.Register(e.xskMap, 0) })
		buf := make([]byte, 2048)
		run(b, func(credits chan struct{}) int {
			n, err := readUDP(fdB, buf)
			if err != nil || n != len(payload) {
				b.Logf("read: %d bytes, %v", n, err)
				return -1
			}
			credits <- struct{}{}
			return 1
		})
	})
}
