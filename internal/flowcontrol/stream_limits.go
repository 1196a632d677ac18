package flowcontrol

// IncomingStreams limits how many streams of one type (bidirectional or
// unidirectional) the peer may open (RFC 9000 section 4.6), and raises the
// limit with MAX_STREAMS as streams close so the peer keeps the same
// concurrency.
type IncomingStreams struct {
	limit  uint64 // MAX_STREAMS advertised: stream numbers below it may open
	opened uint64 // streams the peer opened: numbers below it exist
	closed uint64
	target uint64 // concurrency offered: the initial limit
}

// Init sets the initial limit (our initial_max_streams_* transport
// parameter), capped at 2^60.
func (s *IncomingStreams) Init(initialMax uint64) {
	initialMax = min(initialMax, MaxStreamCount)
	*s = IncomingStreams{limit: initialMax, target: initialMax}
}

// Limit returns the MAX_STREAMS value currently advertised.
func (s *IncomingStreams) Limit() uint64 { return s.limit }

// Opened returns how many streams the peer opened.
func (s *IncomingStreams) Opened() uint64 { return s.opened }

// Open records that the peer used stream number num, which implicitly opens
// every lower number of the type (RFC 9000 section 3.2). It returns the first
// newly opened number and how many were opened; n is 0 when num already
// existed. A number at or beyond the limit is a STREAM_LIMIT_ERROR.
func (s *IncomingStreams) Open(num uint64) (first, n uint64, err error) {
	if num >= s.limit {
		return 0, 0, newError(StreamLimitError, "stream number %d, limit %d", num, s.limit)
	}
	if num < s.opened {
		return 0, 0, nil
	}
	first, n = s.opened, num+1-s.opened
	s.opened = num + 1
	return first, n, nil
}

// Close records that one of the peer's streams is fully closed.
func (s *IncomingStreams) Close() error {
	if s.closed >= s.opened {
		return ErrNoOpenStreams
	}
	s.closed++
	return nil
}

func (s *IncomingStreams) nextLimit() uint64 { return min(s.closed+s.target, MaxStreamCount) }

// NeedsUpdate reports whether a MAX_STREAMS frame should be sent: closed
// streams have freed at least half the offered concurrency (at least one
// stream), batching updates without starving the peer.
func (s *IncomingStreams) NeedsUpdate() bool {
	next := s.nextLimit()
	return next > s.limit && next-s.limit >= max(s.target/2, 1)
}

// MaybeUpdate returns the new MAX_STREAMS value and true when an update is
// due; the limit counts as advertised once returned.
func (s *IncomingStreams) MaybeUpdate() (uint64, bool) {
	if !s.NeedsUpdate() {
		return s.limit, false
	}
	s.limit = s.nextLimit()
	return s.limit, true
}

// OutgoingStreams tracks how many streams of one type we may open under the
// peer's MAX_STREAMS.
type OutgoingStreams struct {
	limit  uint64
	opened uint64

	blockedSent  bool
	blockedLimit uint64
}

// Init applies the peer's initial_max_streams_* transport parameter; a value
// above 2^60 is a TRANSPORT_PARAMETER_ERROR (RFC 9000 section 4.6).
func (s *OutgoingStreams) Init(initialMax uint64) error {
	if initialMax > MaxStreamCount {
		return newError(TransportParameterError, "initial_max_streams %d above 2^60", initialMax)
	}
	*s = OutgoingStreams{limit: initialMax}
	return nil
}

// Limit returns the peer's current limit.
func (s *OutgoingStreams) Limit() uint64 { return s.limit }

// Opened returns how many streams we opened; numbers below it exist.
func (s *OutgoingStreams) Opened() uint64 { return s.opened }

// Available returns how many more streams we may open now.
func (s *OutgoingStreams) Available() uint64 { return s.limit - s.opened }

// OnMaxStreams applies a MAX_STREAMS frame and reports whether it raised the
// limit. Smaller values are ignored; values above 2^60 are a
// FRAME_ENCODING_ERROR.
func (s *OutgoingStreams) OnMaxStreams(limit uint64) (bool, error) {
	if limit > MaxStreamCount {
		return false, newError(FrameEncodingError, "MAX_STREAMS %d above 2^60", limit)
	}
	if limit <= s.limit {
		return false, nil
	}
	s.limit = limit
	return true, nil
}

// Open takes the next stream number, or returns ErrStreamsBlocked when the
// peer's limit is reached.
func (s *OutgoingStreams) Open() (uint64, error) {
	if s.opened >= s.limit {
		return 0, ErrStreamsBlocked
	}
	s.opened++
	return s.opened - 1, nil
}

// Blocked reports whether a STREAMS_BLOCKED frame should be sent, and with
// which limit: once per limit value while no stream may be opened.
func (s *OutgoingStreams) Blocked() (limit uint64, send bool) {
	if s.Available() > 0 || (s.blockedSent && s.blockedLimit == s.limit) {
		return s.limit, false
	}
	s.blockedSent, s.blockedLimit = true, s.limit
	return s.limit, true
}
