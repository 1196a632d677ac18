package flowcontrol

import "time"

// StreamReceiver is receive flow control for one stream: MAX_STREAM_DATA,
// the final size rules of RFC 9000 section 4.5, and the stream's share of
// the connection's credit.
type StreamReceiver struct {
	w    recvWindow
	conn *ConnReceiver
	id   uint64

	finalKnown bool
	finalSize  uint64
	abandoned  bool // the application will read no more: release at once
}

// Init (re)initializes s, for embedding in a stream. conn must not be nil.
func (s *StreamReceiver) Init(id uint64, conn *ConnReceiver, cfg WindowConfig) {
	*s = StreamReceiver{conn: conn, id: id}
	s.w.init(cfg)
}

// Limit returns the MAX_STREAM_DATA value currently advertised.
func (s *StreamReceiver) Limit() uint64 { return s.w.limit }

// Highest returns the highest offset received.
func (s *StreamReceiver) Highest() uint64 { return s.w.highest }

// Consumed returns the bytes the application has read.
func (s *StreamReceiver) Consumed() uint64 { return s.w.consumed }

// Window returns the current window size.
func (s *StreamReceiver) Window() uint64 { return s.w.window }

// FinalSize returns the stream's final size once a FIN or RESET_STREAM
// fixed it.
func (s *StreamReceiver) FinalSize() (uint64, bool) { return s.finalSize, s.finalKnown }

// OnStreamFrame accounts for a STREAM frame carrying length bytes at offset.
// On error nothing changes and the connection must close with the error's
// code.
func (s *StreamReceiver) OnStreamFrame(offset, length uint64, fin bool) error {
	if offset > MaxOffset || length > MaxOffset-offset {
		// RFC 9000 19.8: offsets past 2^62-1 cannot be granted credit.
		return newError(FlowControlError, "stream %d: data end beyond 2^62-1", s.id)
	}
	end := offset + length
	if s.finalKnown {
		if end > s.finalSize {
			return newError(FinalSizeError, "stream %d: data up to %d beyond final size %d", s.id, end, s.finalSize)
		}
		if fin && end != s.finalSize {
			return newError(FinalSizeError, "stream %d: final size changed from %d to %d", s.id, s.finalSize, end)
		}
	} else if fin && end < s.w.highest {
		return newError(FinalSizeError, "stream %d: final size %d below data received up to %d", s.id, end, s.w.highest)
	}
	if err := s.advance(end); err != nil {
		return err
	}
	if fin {
		s.finalKnown, s.finalSize = true, end
	}
	return nil
}

// NoteArrival tells the receiver that stream data arrived at now: the first
// arrival starts the auto-tuning epochs of the stream and the connection.
func (s *StreamReceiver) NoteArrival(now time.Time) {
	s.w.noteArrival(now)
	s.conn.w.noteArrival(now)
}

// OnResetStream accounts for a RESET_STREAM frame. The final size it
// carries counts against both windows, and since the application will never
// read the rest, all of it is released to the connection window.
func (s *StreamReceiver) OnResetStream(finalSize uint64) error {
	if err := s.OnResetStreamAt(finalSize); err != nil {
		return err
	}
	s.Abandon()
	return nil
}

// OnResetStreamAt accounts for a RESET_STREAM_AT frame: its final size is
// checked and counted as RESET_STREAM's, but the application still reads
// up to the reliable size, so nothing is released before Abandon.
func (s *StreamReceiver) OnResetStreamAt(finalSize uint64) error {
	if finalSize > MaxOffset {
		return newError(FlowControlError, "stream %d: final size beyond 2^62-1", s.id)
	}
	if s.finalKnown && finalSize != s.finalSize {
		return newError(FinalSizeError, "stream %d: final size changed from %d to %d", s.id, s.finalSize, finalSize)
	}
	if finalSize < s.w.highest {
		return newError(FinalSizeError, "stream %d: final size %d below data received up to %d", s.id, finalSize, s.w.highest)
	}
	if err := s.advance(finalSize); err != nil {
		return err
	}
	s.finalKnown, s.finalSize = true, finalSize
	return nil
}

// advance checks end against both limits and then moves the highest offset.
func (s *StreamReceiver) advance(end uint64) error {
	if end > s.w.limit {
		return newError(FlowControlError, "stream %d: data up to %d beyond MAX_STREAM_DATA %d", s.id, end, s.w.limit)
	}
	if end <= s.w.highest {
		return nil
	}
	delta := end - s.w.highest
	if err := s.conn.reserve(delta); err != nil {
		return err
	}
	s.w.highest = end
	s.conn.w.highest += delta
	if s.abandoned {
		s.release()
	}
	return nil
}

// Consume records that the application read n more bytes, returning credit
// to the stream and the connection.
func (s *StreamReceiver) Consume(n uint64) error {
	if err := s.w.consume(n); err != nil {
		return err
	}
	s.conn.w.consumed += n
	return nil
}

// Abandon records that the application will read nothing more (it reset the
// read side, or the peer reset the stream). Everything received, and all
// data still to arrive, is released to the connection window at once, so a
// dead stream cannot starve the others.
func (s *StreamReceiver) Abandon() {
	s.abandoned = true
	s.release()
}

func (s *StreamReceiver) release() {
	n := s.w.highest - s.w.consumed
	s.w.consumed = s.w.highest
	s.conn.w.consumed += n
}

// NeedsUpdate reports whether a MAX_STREAM_DATA frame should be sent. Once
// the final size is known or the stream is abandoned, none is needed.
func (s *StreamReceiver) NeedsUpdate() bool {
	return !s.finalKnown && !s.abandoned && s.w.needsUpdate()
}

// MaybeUpdate returns the new MAX_STREAM_DATA value and true when an update
// is due. It auto-tunes the window first; when the stream window grows, the
// connection window is raised to at least 1.5 times it, so one fast stream
// is not held back by the connection limit.
func (s *StreamReceiver) MaybeUpdate(now time.Time, srtt time.Duration) (uint64, bool) {
	if !s.NeedsUpdate() {
		return s.w.limit, false
	}
	if s.w.autoTune(now, srtt, s.conn.holdGrowth) {
		s.conn.grow(s.w.window + s.w.window/2)
	}
	s.w.limit = s.w.nextLimit()
	return s.w.limit, true
}
