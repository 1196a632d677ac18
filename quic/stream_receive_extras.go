package quic

import (
	"context"
	"io"
	"time"
)

// peek fills p with stream data without consuming it, waiting until len(p)
// bytes are there, the stream ends (io.EOF with what there is), the read
// deadline passes or the stream fails.
func (s *stream) peek(p []byte) (int, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if s.recvErr != nil {
			return 0, s.recvErr
		}
		if s.eofRead {
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if s.peerReset != nil {
			// Only the bytes below a RESET_STREAM_AT's reliable size, then
			// its error.
			if left := s.peerReliable - s.recv.ReadOffset(); uint64(len(p)) > left && uint64(s.recv.Readable()) >= left {
				return s.recv.CopyAt(p[:left]), s.peerReset
			}
		}
		if s.recv.Readable() >= len(p) {
			return s.recv.CopyAt(p), nil
		}
		if fs, ok := s.fcRecv.FinalSize(); ok && s.recv.ReadOffset()+uint64(s.recv.Readable()) >= fs {
			return s.recv.CopyAt(p), io.EOF
		}
		if c.close.err != nil {
			return 0, c.close.err
		}
		if !s.readDeadline.IsZero() && !time.Now().Before(s.readDeadline) {
			return 0, errDeadline
		}
		c.waitLocked(context.Background(), waitChan(&s.readSig), nil, s.readDeadline)
	}
}

// releaseCredit is ReleaseStreamCredit: with Config.RequireStreamCreditRelease
// a stream the peer opened keeps counting against its limit until both
// this was called and the stream completed.
func (s *stream) releaseCredit() {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.creditReleased {
		return
	}
	s.creditReleased = true
	if s.creditHeld {
		s.giveBackCredit()
	}
}

// setFinalSizeCallback installs cb, calling it at once (outside the lock)
// when the final size is already known.
func (s *stream) setFinalSizeCallback(cb func(int64)) {
	c := s.c
	c.mu.Lock()
	if s.finalSizeTold {
		c.mu.Unlock()
		return
	}
	s.finalSizeCB = cb
	fs, known := s.fcRecv.FinalSize()
	if cb != nil && known {
		s.finalSizeTold = true
		s.finalSizeCB = nil
	}
	c.mu.Unlock()
	if cb != nil && known {
		cb(int64(fs))
	}
}

// noteFinalSize queues the final-size callback once the size is known; it
// runs on the connection's goroutine, with the lock held, and run makes the
// call once it released the lock (callbackOutbox).
func (s *stream) noteFinalSize() {
	if s.finalSizeCB == nil || s.finalSizeTold {
		return
	}
	if fs, ok := s.fcRecv.FinalSize(); ok {
		s.c.out.finalSizes = append(s.c.out.finalSizes, finalSizeCall{s.finalSizeCB, int64(fs)})
		s.finalSizeTold, s.finalSizeCB = true, nil
	}
}

// notifyReadable is NotifyReadable: cb runs once, as soon as a Read would
// not block; at once, on the caller's goroutine, when that is so already.
// A nil cb cancels the one installed.
func (s *stream) notifyReadable(cb func()) {
	c := s.c
	c.mu.Lock()
	s.readableCB = nil
	now := cb != nil && s.readableLocked()
	if cb != nil && !now {
		s.readableCB = cb
	}
	c.mu.Unlock()
	if now {
		cb()
	}
}

// readableLocked reports whether a Read would return without waiting:
// data, the end of the stream, a reset or an error is there.
func (s *stream) readableLocked() bool {
	if s.recvErr != nil || s.eofRead || s.peerReset != nil || s.recv.Readable() > 0 || s.c.close.err != nil {
		return true
	}
	fs, ok := s.fcRecv.FinalSize()
	return ok && s.recv.ReadOffset()+uint64(s.recv.Readable()) >= fs
}

// noteReadable queues the NotifyReadable callback once a Read would not
// block; like every callback it is called once run released the lock
// (callbackOutbox).
func (s *stream) noteReadable() {
	if s.readableCB == nil || !s.readableLocked() {
		return
	}
	s.c.out.notifications = append(s.c.out.notifications, s.readableCB)
	s.readableCB = nil
}
