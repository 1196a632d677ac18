package flowcontrol

// SendCredit is send-side flow control against one peer limit: MAX_DATA for
// the connection or MAX_STREAM_DATA for a stream. Used counts new bytes only;
// retransmitted data takes no further credit.
type SendCredit struct {
	limit uint64
	used  uint64

	// The peer learns we are blocked once per limit value (RFC 9000 4.1).
	blockedSent  bool
	blockedLimit uint64
}

// Init (re)initializes c, for embedding.
func (c *SendCredit) Init(initialLimit uint64) {
	*c = SendCredit{limit: min(initialLimit, MaxOffset)}
}

// Limit returns the peer's current limit.
func (c *SendCredit) Limit() uint64 { return c.limit }

// Used returns the bytes sent so far against the limit.
func (c *SendCredit) Used() uint64 { return c.used }

// Available returns how many new bytes may be sent now.
func (c *SendCredit) Available() uint64 { return c.limit - c.used }

// OnMaxData applies a MAX_DATA or MAX_STREAM_DATA value and reports whether
// it raised the limit. Limits only grow: reordered frames carrying smaller
// values are ignored (RFC 9000 section 4.1).
func (c *SendCredit) OnMaxData(limit uint64) bool {
	if limit <= c.limit {
		return false
	}
	c.limit = min(limit, MaxOffset)
	return true
}

// Consume takes n bytes of credit. Asking for more than Available is a bug
// in the caller and changes nothing.
func (c *SendCredit) Consume(n uint64) error {
	if n > c.Available() {
		return ErrCreditExceeded
	}
	c.used += n
	return nil
}

// Blocked reports whether a DATA_BLOCKED or STREAM_DATA_BLOCKED frame
// should be sent, and with which limit. Call it when data is waiting; it
// answers true once per limit value while no credit is left.
func (c *SendCredit) Blocked() (limit uint64, send bool) { return c.BlockedAfter(0) }

// BlockedAfter is Blocked as it will be once n more bytes are sent: the
// frame that uses up the credit can carry the blocked frame with it, when
// more data waits behind it.
func (c *SendCredit) BlockedAfter(n uint64) (limit uint64, send bool) {
	if !c.BlockedDue(n) {
		return c.limit, false
	}
	c.blockedSent, c.blockedLimit = true, c.limit
	return c.limit, true
}

// BlockedDue reports, without marking it sent, whether a blocked frame
// for the current limit is still to be sent once n more bytes are.
func (c *SendCredit) BlockedDue(n uint64) bool {
	return c.Available() <= n && !(c.blockedSent && c.blockedLimit == c.limit)
}

// StreamSender is the send side of one stream: its own MAX_STREAM_DATA
// credit, bounded by the connection's MAX_DATA credit.
type StreamSender struct {
	stream SendCredit
	conn   *SendCredit
}

// Init (re)initializes s, for embedding in a stream. conn must not be nil.
func (s *StreamSender) Init(conn *SendCredit, initialLimit uint64) {
	s.conn = conn
	s.stream.Init(initialLimit)
}

// OnMaxStreamData applies a MAX_STREAM_DATA value; see SendCredit.OnMaxData.
func (s *StreamSender) OnMaxStreamData(limit uint64) bool { return s.stream.OnMaxData(limit) }

// Limit returns the peer's MAX_STREAM_DATA for this stream.
func (s *StreamSender) Limit() uint64 { return s.stream.limit }

// Used returns the stream offset sent so far.
func (s *StreamSender) Used() uint64 { return s.stream.used }

// Available returns how many new bytes the stream may send now, the smaller
// of its own and the connection's credit.
func (s *StreamSender) Available() uint64 {
	return min(s.stream.Available(), s.conn.Available())
}

// Consume takes n bytes of credit from the stream and the connection.
func (s *StreamSender) Consume(n uint64) error {
	if n > s.Available() {
		return ErrCreditExceeded
	}
	s.stream.used += n
	s.conn.used += n
	return nil
}

// StreamDataBlocked reports whether a STREAM_DATA_BLOCKED frame should be
// sent; see SendCredit.Blocked. Connection blocking is asked of the
// connection's SendCredit.
func (s *StreamSender) StreamDataBlocked() (limit uint64, send bool) { return s.stream.Blocked() }

// StreamDataBlockedAfter is StreamDataBlocked once n more bytes are sent;
// see SendCredit.BlockedAfter.
func (s *StreamSender) StreamDataBlockedAfter(n uint64) (limit uint64, send bool) {
	return s.stream.BlockedAfter(n)
}

// BlockedDue reports whether the stream's or the connection's blocked
// frame is still to be sent now.
func (s *StreamSender) BlockedDue() bool { return s.stream.BlockedDue(0) || s.conn.BlockedDue(0) }
