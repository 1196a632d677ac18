package quic

import (
	"context"
	"io"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
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
		q := p
		if s.peerReset != nil {
			q = p[:min(uint64(len(p)), s.peerReliable-s.recv.ReadOffset())]
		}
		if n, _ := s.recv.Read(q); n > 0 {
			_ = s.fcRecv.Consume(uint64(n))
			c.recvMem.charge(s)
			c.syncBudgets()
			if s.fcRecv.NeedsUpdate() {
				s.queueControl()
			}
			if c.flow.recv.NeedsUpdate() {
				c.wake()
			}
			// As with io.EOF below, the read that reaches a
			// RESET_STREAM_AT's reliable size reports the reset.
			if s.finishPeerReset() {
				return n, s.recvErr
			}
			// Like quic-go, the read that reaches the final size reports
			// io.EOF with the last bytes, so a reader that stops once it has
			// its data still completes the stream (and frees its credit).
			if s.allRead() {
				s.eofRead = true
				s.maybeRemove()
				return n, io.EOF
			}
			return n, nil
		}
		if s.allRead() {
			s.eofRead = true
			s.maybeRemove()
			return 0, io.EOF
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
	if s.peerReset != nil {
		// The peer's RESET_STREAM_AT is here: nothing to ask of it, and
		// the reader gets its error, as in quic-go.
		s.peerReliable = 0
		s.finishPeerReset()
		return
	}
	s.recvErr = &StreamError{StreamID: StreamID(s.id), ErrorCode: code}
	c.recvMem.release(s)
	s.fcRecv.Abandon()
	if !s.resetRecvd {
		s.stopPending = true
		s.stopCode = uint64(code)
		s.queueControl()
	}
	s.signalRead()
	s.maybeRemove()
}

func (s *stream) setReadDeadline(t time.Time) {
	s.c.mu.Lock()
	s.readDeadline = t
	s.signalRead()
	s.c.mu.Unlock()
}

// onPeerReset handles RESET_STREAM and RESET_STREAM_AT (a reliable size of
// 0 is RESET_STREAM). The reader first gets the data below the smallest
// reliable size received (a larger one, reordered, is ignored: draft
// section 5.2), then the reset error; RESET_STREAM makes that at once.
func (s *stream) onPeerReset(f *wire.Frame) error {
	if err := s.fcRecv.OnResetStreamAt(f.FinalSize); err != nil {
		return err
	}
	if s.peerResetKnown && f.ErrorCode != s.peerResetCode && s.c.config.EnableStreamResetPartialDelivery {
		return qerr.NewTransportError(qerr.StreamStateError, 0, "reset error code changed")
	}
	s.peerResetKnown, s.peerResetCode = true, f.ErrorCode
	s.noteFinalSize()
	reliable := f.ReliableSize
	if f.Type == wire.FrameTypeResetStream {
		reliable = 0
	}
	if s.resetRecvd || s.eofRead || s.recvErr != nil {
		// Already reset, read to the end or stopped by CancelRead: no
		// data is owed to the reader.
		s.fcRecv.Abandon()
		if !s.resetRecvd && !s.eofRead {
			s.resetRecvd = true
			s.c.recvMem.release(s)
			s.signalRead()
			s.maybeRemove()
		}
		return nil
	}
	if s.peerReset == nil {
		s.peerReset = &StreamError{StreamID: StreamID(s.id), ErrorCode: StreamErrorCode(f.ErrorCode), Remote: true}
		s.peerReliable = reliable
	}
	s.peerReliable = min(s.peerReliable, reliable)
	s.signalRead()
	s.finishPeerReset()
	return nil
}

// finishPeerReset makes a pending RESET_STREAM_AT the reader's error once
// it read every byte below the reliable size, and reports whether it did.
func (s *stream) finishPeerReset() bool {
	if s.peerReset == nil || s.recv.ReadOffset() < s.peerReliable {
		return false
	}
	s.resetRecvd = true
	if s.recvErr == nil {
		s.recvErr = s.peerReset
	}
	s.peerReset = nil
	s.c.recvMem.release(s)
	s.fcRecv.Abandon()
	s.signalRead()
	s.maybeRemove()
	return true
}
