package recovery

import (
	"errors"

	"github.com/turboretry/turboretry/internal/qerr"
)

// The peer's errors OnAckReceived returns are *qerr.TransportError values
// the connection closes with (frame type 0: it knows the ACK frame's);
// the others are the caller's own bugs.
var (
	// ErrUnsentPacketAcked means an ACK frame acknowledged a packet number
	// that was never sent, including one skipped on purpose to detect
	// optimistic ACKs (RFC 9000 sections 13.1 and 21.4): PROTOCOL_VIOLATION.
	ErrUnsentPacketAcked = qerr.NewProtocolViolation(0, "ACK frame acknowledges a packet that was never sent")
	// ErrInvalidAckRanges means the ranges were empty, inverted, or not in
	// strictly descending order. A correct frame decoder cannot produce
	// them: FRAME_ENCODING_ERROR.
	ErrInvalidAckRanges = qerr.NewFrameEncodingError(0, "ACK ranges empty, inverted or not descending")
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
