package quic

import (
	"context"
	"time"
)

func (s *stream) writeErrLocked() error {
	switch {
	case s.sendErr != nil:
		return s.sendErr
	case s.c.close.err != nil:
		return s.c.close.err
	case s.sendClosed:
		return ErrStreamClosed
	case !s.writeDeadline.IsZero() && !time.Now().Before(s.writeDeadline):
		return errDeadline
	}
	return nil
}

func (s *stream) write(p []byte) (int, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	counted := false
	for {
		if err := s.writeErrLocked(); err != nil {
			return n, err
		}
		if len(p) == 0 {
			return n, s.drainLocked()
		}
		c.syncBudgets() // give back what acknowledgements freed first
		room, bound := s.writeRoom(int64(len(p)))
		if room > 0 {
			k := c.t.sendBudget.take(min(int64(len(p)), room))
			if k > 0 {
				w := int64(s.send.Write(p[:k]))
				if w < k {
					c.t.sendBudget.add(w - k)
				}
				p = p[w:]
				n += int(w)
				c.budget.charge(s)
				c.budget.sendReported += w
				s.queueSend()
				if w < k {
					return n, errMaxOffset(s.id)
				}
				continue
			}
			bound = budgetTransport
		}
		// Flow control wakes the writer through writeSig (MAX_DATA,
		// MAX_STREAM_DATA, acknowledgements); a budget through its own
		// signal, taken before the room is checked again.
		var budget <-chan struct{}
		switch bound {
		case budgetConn:
			budget = waitChan(&c.budget.sig)
		case budgetTransport:
			budget = c.t.sendBudget.waitChan()
			if c.t.sendBudget.used.Load() < c.t.sendBudget.max {
				continue
			}
		}
		if bound != budgetNone && !counted {
			counted = true
			c.t.counters.sendBudgetWaits.Add(1)
		}
		if bound == budgetNone {
			s.writeWaiting = true
			if s.blockedWriterDue() {
				s.queueControl()
			}
		}
		c.waitLocked(context.Background(), waitChan(&s.writeSig), budget, s.writeDeadline)
		s.writeWaiting = false
	}
}

// drainLocked waits, once a Write queued all its data, until no more than
// writeDrain bytes of the stream are unsent, as quic-go's Write returns
// once its data is packed: a STOP_SENDING or a connection error that comes
// meanwhile is the Write's error. A deadline that passes here does not
// fail the Write: its data is queued and goes out.
func (s *stream) drainLocked() error {
	for s.send.Unsent() > writeDrain {
		if err := s.writeErrLocked(); err != nil {
			if err == errDeadline {
				return nil
			}
			return err
		}
		s.drainWaiting = true
		s.c.waitLocked(context.Background(), waitChan(&s.writeSig), nil, s.writeDeadline)
		s.drainWaiting = false
	}
	return nil
}

func (s *stream) closeSend() error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.sendErr != nil || s.sendClosed {
		return nil
	}
	if c.close.err != nil {
		return c.close.err
	}
	s.sendClosed = true
	s.send.Close()
	s.endSend(ErrStreamClosed)
	s.queueSend()
	return nil
}

func (s *stream) cancelWrite(code StreamErrorCode) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.sendErr != nil || s.send.AllAcked() || c.close.err != nil {
		return
	}
	var reliable uint64
	if c.hs.peerAcceptsResetStreamAt() {
		reliable = s.reliableSize
	}
	s.resetLocked(uint64(code), &StreamError{StreamID: StreamID(s.id), ErrorCode: code}, reliable)
	c.syncBudgets()
}

// peerAcceptsResetStreamAt reports whether the peer advertised
// reset_stream_at (remembered from the ticket in 0-RTT).
func (hs *handshakeState) peerAcceptsResetStreamAt() bool {
	return hs.peerParams != nil && hs.peerParams.ResetStreamAt
}

// setReliableBoundary marks the data written so far as reliable: a later
// CancelWrite still delivers it, if the peer accepts RESET_STREAM_AT.
func (s *stream) setReliableBoundary() {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.sendErr == nil {
		s.reliableSize = max(s.reliableSize, s.send.WriteOffset())
	}
}

// resetLocked abandons the send side and queues RESET_STREAM, or with a
// reliable size RESET_STREAM_AT, whose data below that size still goes
// out and is resent until acknowledged.
func (s *stream) resetLocked(code uint64, err error, reliable uint64) {
	s.sendErr = err
	s.resetPending = true
	s.resetCode = code
	s.resetReliable = reliable
	if reliable > 0 {
		s.resetFinal = s.send.ResetAt(reliable)
		s.queueSend()
	} else {
		s.resetFinal = s.send.Reset()
	}
	s.c.budget.charge(s)
	s.endSend(err)
	s.signalWrite()
	s.queueControl()
}

// resetDue reports whether the pending reset may go out. A RESET_STREAM_AT
// waits until the data below its reliable size was sent once: its final
// size is then within the peer's flow control limits (draft section 4),
// and the data reaches the peer before the reset, as far as order goes.
func (s *stream) resetDue() bool {
	return s.resetReliable == 0 || s.send.IsReset() || s.send.SentHighWater() >= s.resetReliable
}

// onStopSending answers STOP_SENDING: the send side is reset with its
// code; a RESET_STREAM_AT is replaced by a RESET_STREAM with the same code
// and final size, as the peer reads nothing more (draft section 5.4).
func (s *stream) onStopSending(code uint64) {
	switch {
	case s.sendErr == nil && !s.send.AllAcked():
		s.resetLocked(code, &StreamError{StreamID: StreamID(s.id), ErrorCode: StreamErrorCode(code), Remote: true}, 0)
	case s.sendErr != nil && s.resetReliable > 0 && !s.sendFinished():
		sent := s.send.Reset()
		if !s.resetSent && s.resetFinal == s.resetReliable {
			// The RESET_STREAM_AT never went out, and its final size
			// counted data not sent yet, maybe beyond the peer's limits.
			s.resetFinal = sent
		}
		s.c.budget.charge(s)
		s.resetReliable = 0
		s.resetPending, s.resetAcked = true, false
		s.queueControl()
	}
}

func (s *stream) setWriteDeadline(t time.Time) {
	s.c.mu.Lock()
	s.writeDeadline = t
	s.signalWrite()
	s.c.mu.Unlock()
}
