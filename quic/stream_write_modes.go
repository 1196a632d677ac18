package quic

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// limitedWrite is a WriteWithLimit in progress: its data enters the send
// buffer only as its limiter grants it, so every byte queued was granted.
// Packetization offers the bytes the next STREAM frame may carry
// (appendLimited, under mu); the writing goroutine asks the limiter about
// the offer without mu, as no application code runs under our locks, and
// queues the grant (writeGranted).
type limitedWrite struct {
	p       []byte
	limiter func(maxBytes int) int
	n       int   // bytes accepted so far
	err     error // set when the write is done: nil or ErrWriteLimitReached
	done    bool
	offer   int // bytes offered and not yet asked about; 0: none
}

var errConcurrentLimitedWrite = errors.New("quic: concurrent WriteWithLimit on a stream")

func errMaxOffset(id uint64) error {
	return fmt.Errorf("quic: stream %d reached the maximum offset", id)
}

// tryWriteAll queues all of p if that is possible without waiting (flow
// control, the stream's bound and the send budgets), else nothing.
func (s *stream) tryWriteAll(p []byte) error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := s.writeErrLocked(); err != nil && err != errDeadline {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	if s.limited != nil {
		return ErrWouldBlock
	}
	c.syncBudgets()
	if room, _ := s.writeRoom(0); room < int64(len(p)) {
		return ErrWouldBlock
	}
	k := c.t.sendBudget.take(int64(len(p)))
	if k < int64(len(p)) {
		c.t.sendBudget.add(-k)
		return ErrWouldBlock
	}
	w := s.send.Write(p)
	if w < len(p) {
		c.t.sendBudget.add(int64(w - len(p)))
	}
	c.budget.charge(s)
	c.budget.sendReported += int64(w)
	s.queueSend()
	if w < len(p) {
		return errMaxOffset(s.id)
	}
	return nil
}

// writeWithLimit writes p as Write does, except that the data goes out
// only as far as limiter allows: packetization offers it the bytes the
// next STREAM frame may carry and takes what it returns. A short answer
// ends the write with the bytes accepted so far and ErrWriteLimitReached.
func (s *stream) writeWithLimit(p []byte, limiter func(maxBytes int) int) (int, error) {
	if limiter == nil {
		return s.write(p)
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := s.writeErrLocked(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.limited != nil {
		return 0, errConcurrentLimitedWrite
	}
	lw := &limitedWrite{p: p, limiter: limiter}
	s.limited = lw
	defer func() { s.limited = nil }()
	s.queueSend()
	for !lw.done {
		if err := s.writeErrLocked(); err != nil {
			return lw.n, err
		}
		if offer := lw.offer; offer > 0 {
			c.mu.Unlock()
			granted := limiter(offer)
			c.mu.Lock()
			lw.offer = 0
			if err := s.writeErrLocked(); err != nil {
				return lw.n, err
			}
			s.writeGranted(int64(offer), int64(granted))
			continue
		}
		c.waitLocked(context.Background(), waitChan(&s.writeSig), c.t.sendBudget.waitChan(), s.writeDeadline)
	}
	return lw.n, lw.err
}

// appendLimited offers the limiter of a limited write the bytes a frame of
// at most room data bytes may carry now; the writer asks it. It runs during
// packetization, when the buffer has nothing unsent.
func (s *stream) appendLimited(room int) {
	lw := s.limited
	c := s.c
	if lw == nil || lw.done || lw.offer > 0 || room <= 0 || s.send.Unsent() > 0 {
		return
	}
	// Offer only what flow control and the send budgets allow now, so the
	// limiter's credit is not spent on bytes that cannot be queued.
	offer := int64(min(room, len(lw.p)-lw.n))
	offer = min(offer, int64(min(s.fcSend.Available(), math.MaxInt64)))
	offer = min(offer, c.t.sendBudget.max-c.t.sendBudget.used.Load())
	offer = min(offer, int64(min(c.config.MaxConnectionSendBuffer, math.MaxInt64))-c.budget.sendHeld)
	if offer <= 0 {
		return
	}
	lw.offer = int(offer)
	s.signalWrite()
}

// writeGranted queues the part of a limited write the limiter granted out
// of offer, clamped to [0, offer]; the send loop takes it from there.
func (s *stream) writeGranted(offer, granted int64) {
	lw := s.limited
	c := s.c
	granted = min(max(granted, 0), offer)
	// Another connection may take budget in between: then fewer bytes go
	// now and the limiter is asked again for the rest.
	k := int(c.t.sendBudget.take(granted))
	w := s.send.Write(lw.p[lw.n : lw.n+k])
	if w < k {
		c.t.sendBudget.add(int64(w - k))
	}
	lw.n += w
	c.budget.charge(s)
	c.budget.sendReported += int64(w)
	switch {
	case lw.n == len(lw.p):
		lw.done = true
	case k < int(granted):
	case granted < offer:
		lw.done, lw.err = true, ErrWriteLimitReached
	}
	s.queueSend()
}
