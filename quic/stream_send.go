package quic

import (
	"time"
)

// waitLocked releases the connection lock until sig (or budget, when not
// nil) fires, the deadline passes or the connection closes, then takes it
// again.
func (c *Conn) waitLocked(sig, budget <-chan struct{}, deadline time.Time) {
	c.mu.Unlock()
	defer c.mu.Lock()
	var tc <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-sig:
	case <-budget:
	case <-tc:
	case <-c.closedCh:
	}
}

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
				c.chargeSend(s)
				c.budget.sendReported += w
				c.queueStreamSend(s)
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
				c.queueStreamControl(s)
			}
		}
		c.waitLocked(waitChan(&s.writeSig), budget, s.writeDeadline)
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
		s.c.waitLocked(waitChan(&s.writeSig), nil, s.writeDeadline)
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
	s.sendCancel(ErrStreamClosed)
	c.queueStreamSend(s)
	return nil
}

func (s *stream) cancelWrite(code StreamErrorCode) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.sendErr != nil || s.send.AllAcked() || c.close.err != nil {
		return
	}
	s.resetLocked(uint64(code), &StreamError{StreamID: StreamID(s.id), ErrorCode: code})
	c.syncBudgets()
}

// resetLocked abandons the send side and queues RESET_STREAM.
func (s *stream) resetLocked(code uint64, err error) {
	s.sendErr = err
	s.resetPending = true
	s.resetCode = code
	s.resetFinal = s.send.Reset()
	s.c.chargeSend(s)
	s.sendCancel(err)
	s.signalWrite()
	s.c.queueStreamControl(s)
}

func (s *stream) setWriteDeadline(t time.Time) {
	s.c.mu.Lock()
	s.writeDeadline = t
	s.signalWrite()
	s.c.mu.Unlock()
}
