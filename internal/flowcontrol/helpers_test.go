package flowcontrol

// Helpers that only this package's tests use: a connection and its streams
// embed these by value and call Init.

// NewStreamReceiver returns the receiver of stream id, drawing on conn.
func NewStreamReceiver(id uint64, conn *ConnReceiver, cfg WindowConfig) *StreamReceiver {
	s := new(StreamReceiver)
	s.Init(id, conn, cfg)
	return s
}

// NewSendCredit returns credit starting at the peer's initial limit, from
// its transport parameters.
func NewSendCredit(initialLimit uint64) *SendCredit {
	c := new(SendCredit)
	c.Init(initialLimit)
	return c
}

// NewStreamSender returns a stream sender with the peer's initial stream
// limit, drawing on the connection credit conn.
func NewStreamSender(conn *SendCredit, initialLimit uint64) *StreamSender {
	s := new(StreamSender)
	s.Init(conn, initialLimit)
	return s
}
