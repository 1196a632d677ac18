//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// errBadDesc reports a Transmit descriptor outside the UMEM or its frame.
var errBadDesc = errors.New("afxdp: descriptor outside its UMEM frame")

// Frame returns the packet bytes of d in place in the UMEM. Its capacity
// reaches the end of d's frame, so a caller building a packet may extend it
// (buf[:cap(buf)]) and then set d.Len. It returns nil for a descriptor that
// does not lie inside one frame, or after Close.
func (s *Socket) Frame(d Desc) []byte {
	if s.umem == nil || s.umem.mem == nil || !s.umem.valid(d.Addr, d.Len) {
		return nil
	}
	end := s.umem.base(d.Addr) + s.umem.frameSize
	return s.umem.mem[d.Addr : d.Addr+uint64(d.Len) : end]
}

// Receive moves up to len(batch) received packets from the RX ring into
// batch and returns how many. The frames stay the caller's until Release
// (or Transmit) hands them back. Receive never blocks; see Wait.
func (s *Socket) Receive(batch []Desc) int {
	if s.closed || len(batch) == 0 {
		return 0
	}
	n := s.rx.available(uint32(len(batch)))
	n = min(n, uint32(len(batch)))
	if n == 0 {
		// The fill ring may be why nothing arrives.
		s.refill()
		s.kickFill()
		return 0
	}
	for i := uint32(0); i < n; i++ {
		batch[i] = s.rx.descs[(s.rx.local+i)&s.rx.mask]
	}
	s.rx.release(n)
	s.rxOwned -= int(n)
	s.refill()
	return int(n)
}

// Release gives received frames back: to the fill ring while reception is
// short of frames, otherwise to the free stack that AllocFrame draws from.
// Each frame must be released once, and not while also queued on Transmit.
func (s *Socket) Release(descs []Desc) {
	if s.closed {
		return
	}
	for _, d := range descs {
		if d.Addr < uint64(len(s.umem.mem)) {
			s.umem.push(d.Addr)
		}
	}
	s.refill()
}

// refill moves free frames into the fill ring until reception holds its
// share of frames again.
func (s *Socket) refill() {
	want := s.rxTarget - s.rxOwned
	if want <= 0 || len(s.umem.free) == 0 {
		return
	}
	want = min(want, len(s.umem.free))
	n := min(s.fill.freeSlots(uint32(want)), uint32(want))
	if n == 0 {
		return
	}
	for i := uint32(0); i < n; i++ {
		a, _ := s.umem.pop()
		s.fill.addrs[(s.fill.local+i)&s.fill.mask] = a
	}
	s.fill.submit(n)
	s.rxOwned += int(n)
	s.kickFill()
}

// kickFill wakes the driver when it stopped for lack of fill entries.
func (s *Socket) kickFill() {
	if s.fill.needWakeup() {
		// recvfrom with no buffer only runs the socket's wakeup path.
		_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// AllocFrame takes a free frame for a packet to transmit, reclaiming
// completed transmissions first when none is free. The returned descriptor
// has Len 0; fill s.Frame(d)[:n] (capacity: the whole frame), set d.Len = n
// and Transmit it. ok is false when every frame is in use.
func (s *Socket) AllocFrame() (d Desc, ok bool) {
	if s.closed {
		return Desc{}, false
	}
	if len(s.umem.free) == 0 {
		s.Complete()
	}
	a, ok := s.umem.pop()
	if !ok {
		return Desc{}, false
	}
	return Desc{Addr: a}, true
}

// FreeFrame returns a frame from AllocFrame (or Receive) that will not be
// transmitted.
func (s *Socket) FreeFrame(d Desc) {
	if !s.closed && d.Addr < uint64(len(s.umem.mem)) {
		s.umem.push(d.Addr)
	}
}

// Transmit queues packets on the TX ring and kicks the kernel when it asks
// (always in copy mode). It returns how many of descs, from the front, were
// queued; the rest stay the caller's (TX ring full: Complete or Wait for
// Writable, then retry). The frames come back to the free stack once the
// kernel completes them. A descriptor outside its frame, or of length 0,
// stops the batch with an error, since the kernel would silently lose it.
func (s *Socket) Transmit(descs []Desc) (int, error) {
	if s.closed {
		return 0, ErrClosed
	}
	s.Complete()
	n := min(s.tx.freeSlots(uint32(len(descs))), uint32(len(descs)))
	var err error
	for i := uint32(0); i < n; i++ {
		d := descs[i]
		if d.Len == 0 || !s.umem.valid(d.Addr, d.Len) {
			err = fmt.Errorf("%w: addr %d len %d (descriptor %d)", errBadDesc, d.Addr, d.Len, i)
			n = i
			break
		}
		s.tx.descs[(s.tx.local+i)&s.tx.mask] = Desc{Addr: d.Addr, Len: d.Len}
	}
	if n > 0 {
		s.tx.submit(n)
		s.txOut += int(n)
		s.kickTX()
	}
	return int(n), err
}

// kickTX starts transmission when the kernel asks for it. In copy mode
// each sendto sends at most a small budget (32 frames) and answers EAGAIN
// while frames remain, so it is repeated, a bounded number of times, until
// the ring is drained or the kernel reports something else.
func (s *Socket) kickTX() {
	if !s.cfg.NoNeedWakeup && !s.tx.needWakeup() {
		return
	}
	for range s.tx.size/16 + 2 {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		// EBUSY and ENOBUFS (device queue or completion ring full) mean
		// "try later", which the next Transmit, Complete or Wait does.
		if e != unix.EAGAIN || atomic.LoadUint32(s.tx.consumer) == s.tx.local {
			return
		}
	}
}

// Complete reclaims frames the kernel finished transmitting into the free
// stack and returns how many. While transmissions are outstanding it kicks
// the kernel too, since in copy mode sending happens only inside that call.
func (s *Socket) Complete() int {
	if s.closed || s.txOut == 0 {
		return 0
	}
	n := s.comp.available(s.comp.size)
	for i := uint32(0); i < n; i++ {
		s.umem.push(s.comp.addrs[(s.comp.local+i)&s.comp.mask])
	}
	if n > 0 {
		s.comp.release(n)
		s.txOut -= int(n)
	}
	if s.txOut > 0 {
		s.kickTX()
	}
	return int(n)
}

// Pending returns the number of frames queued on TX and not yet completed.
func (s *Socket) Pending() int { return s.txOut }
