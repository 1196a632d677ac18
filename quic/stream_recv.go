package quic

import (
	"io"
	"time"
)

func (s *stream) read(p []byte) (int, error) {
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
		if n, _ := s.recv.Read(p); n > 0 {
			_ = s.fcRecv.Consume(uint64(n))
			c.recvMem.charge(s)
			c.syncBudgets()
			if s.fcRecv.NeedsUpdate() {
				c.queueStreamControl(s)
			}
			if c.flow.recv.NeedsUpdate() {
				c.wake()
			}
			// Like quic-go, the read that reaches the final size reports
			// io.EOF with the last bytes, so a reader that stops once it has
			// its data still completes the stream (and frees its credit).
			if s.allRead() {
				s.eofRead = true
				c.maybeRemoveStream(s)
				return n, io.EOF
			}
			return n, nil
		}
		if s.allRead() {
			s.eofRead = true
			c.maybeRemoveStream(s)
			return 0, io.EOF
		}
		if c.close.err != nil {
			return 0, c.close.err
		}
		if !s.readDeadline.IsZero() && !time.Now().Before(s.readDeadline) {
			return 0, errDeadline
		}
		c.waitLocked(waitChan(&s.readSig), nil, s.readDeadline)
	}
}

// allRead reports whether the reader has consumed every byte up to the
// final size.
func (s *stream) allRead() bool {
	fs, ok := s.fcRecv.FinalSize()
	return ok && s.recv.ReadOffset() >= fs
}

func (s *stream) cancelRead(code StreamErrorCode) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.recvErr != nil || s.eofRead || c.close.err != nil {
		return
	}
	s.recvErr = &StreamError{StreamID: StreamID(s.id), ErrorCode: code}
	c.recvMem.release(s)
	s.fcRecv.Abandon()
	if !s.resetRecvd {
		s.stopPending = true
		s.stopCode = uint64(code)
		c.queueStreamControl(s)
	}
	s.signalRead()
	c.maybeRemoveStream(s)
}

func (s *stream) setReadDeadline(t time.Time) {
	s.c.mu.Lock()
	s.readDeadline = t
	s.signalRead()
	s.c.mu.Unlock()
}
