package recovery

import "errors"

// QUIC transport error codes (RFC 9000 section 20.1) that the connection
// closes with when OnAckReceived fails.
const (
	FrameEncodingError uint64 = 0x07
	ProtocolViolation  uint64 = 0x0a
)

var (
	// ErrUnsentPacketAcked means an ACK frame acknowledged a packet number
	// that was never sent, including one skipped on purpose to detect
	// optimistic ACKs (RFC 9000 sections 13.1 and 21.4). The connection
	// closes with PROTOCOL_VIOLATION.
	ErrUnsentPacketAcked = errors.New("recovery: ACK frame acknowledges a packet that was never sent")
	// ErrInvalidAckRanges means the ranges were empty, inverted, or not in
	// strictly descending order. A correct frame decoder cannot produce
	// them; the connection closes with FRAME_ENCODING_ERROR.
	ErrInvalidAckRanges = errors.New("recovery: ACK ranges empty, inverted or not descending")
	// ErrPacketNumberNotIncreasing means OnPacketSent got a packet number
	// not above the largest one already sent in that space.
	ErrPacketNumberNotIncreasing = errors.New("recovery: sent packet numbers must increase")
	// ErrInvalidPacket means OnPacketSent got a negative size.
	ErrInvalidPacket = errors.New("recovery: packet size is negative")
	// ErrInvalidSpace means a Space value outside the three spaces.
	ErrInvalidSpace = errors.New("recovery: invalid packet number space")
	// ErrSpaceDiscarded means the space's keys were discarded: nothing can
	// be sent or acknowledged in it any more.
	ErrSpaceDiscarded = errors.New("recovery: packet number space was discarded")
	// ErrCannotDiscardApplicationData means DiscardSpace was asked to
	// discard the ApplicationData space, which lives as long as the
	// connection.
	ErrCannotDiscardApplicationData = errors.New("recovery: the ApplicationData space cannot be discarded")
)

// TransportErrorCode returns the transport error code a connection closes
// with for an error returned by OnAckReceived, and false for errors that
// are the caller's own bugs rather than the peer's.
func TransportErrorCode(err error) (uint64, bool) {
	switch {
	case errors.Is(err, ErrUnsentPacketAcked):
		return ProtocolViolation, true
	case errors.Is(err, ErrInvalidAckRanges):
		return FrameEncodingError, true
	default:
		return 0, false
	}
}
