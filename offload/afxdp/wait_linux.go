//go:build linux

package afxdp

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Ready is a set of socket conditions for Wait.
type Ready uint8

// Conditions.
const (
	// Readable: the RX ring holds packets.
	Readable Ready = 1 << iota
	// Writable: the TX ring has room.
	Writable
)

func (r Ready) events() int16 {
	var ev int16
	if r&Readable != 0 {
		ev |= unix.POLLIN
	}
	if r&Writable != 0 {
		ev |= unix.POLLOUT
	}
	return ev
}

func readyOf(revents int16) Ready {
	var r Ready
	if revents&unix.POLLIN != 0 {
		r |= Readable
	}
	if revents&unix.POLLOUT != 0 {
		r |= Writable
	}
	return r
}

// WaitTimeout blocks in poll(2) until one of want holds, or timeout passes
// (negative: no limit), and returns the conditions that hold (none on
// timeout). poll also gives the kernel its wakeup (copy-mode transmission,
// fill ring), so waiting for Writable makes progress on queued frames.
// It does not allocate.
func (s *Socket) WaitTimeout(timeout time.Duration, want Ready) (Ready, error) {
	if s.closed {
		return 0, ErrClosed
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	s.pollFDs[0].Events = want.events()
	for {
		s.pollFDs[0].Revents = 0
		n, err := unix.Poll(s.pollFDs[:1], pollMillis(deadline))
		if err == unix.EINTR {
			continue // retried with what is left of the timeout
		}
		if err != nil {
			return 0, fmt.Errorf("afxdp: poll: %w", err)
		}
		if n == 0 {
			return 0, nil
		}
		return s.pollResult()
	}
}

// pollMillis converts a deadline (zero: none) into poll's timeout argument,
// rounding up so a wait never ends before the deadline.
func pollMillis(deadline time.Time) int {
	if deadline.IsZero() {
		return -1
	}
	left := time.Until(deadline)
	if left <= 0 {
		return 0
	}
	return int(min((left+time.Millisecond-1)/time.Millisecond, 1<<30))
}

func (s *Socket) pollResult() (Ready, error) {
	re := s.pollFDs[0].Revents
	if re&(unix.POLLERR|unix.POLLNVAL) != 0 {
		return 0, fmt.Errorf("afxdp: poll: socket error (revents %#x)", re)
	}
	return readyOf(re), nil
}

// Wait blocks in poll(2) until one of want holds or ctx ends (its error is
// returned then). A context that can end costs one eventfd write when it
// does; cancellation wakes the poll without spinning.
func (s *Socket) Wait(ctx context.Context, want Ready) (Ready, error) {
	if s.closed {
		return 0, ErrClosed
	}
	if ctx.Done() == nil {
		return s.WaitTimeout(-1, want)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	efd := s.eventFD
	stop := context.AfterFunc(ctx, func() {
		one := [8]byte{1}
		_, _ = unix.Write(efd, one[:])
	})
	defer func() {
		if !stop() {
			// The wake-up ran (or is running): drain it so the next Wait
			// starts clean; a late write only causes one spurious loop.
			var buf [8]byte
			_, _ = unix.Read(efd, buf[:])
		}
	}()
	s.pollFDs[0].Events = want.events()
	for {
		s.pollFDs[0].Revents, s.pollFDs[1].Revents = 0, 0
		deadline, _ := ctx.Deadline()
		n, err := unix.Poll(s.pollFDs[:], pollMillis(deadline))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("afxdp: poll: %w", err)
		}
		if n > 0 && s.pollFDs[0].Revents != 0 {
			return s.pollResult()
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if n == 0 && !deadline.IsZero() && !time.Now().Before(deadline) {
			// Past the deadline, before the context's own timer fired.
			return 0, context.DeadlineExceeded
		}
		if s.pollFDs[1].Revents != 0 {
			var buf [8]byte
			_, _ = unix.Read(efd, buf[:])
		}
	}
}
