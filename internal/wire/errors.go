package wire

import "errors"

// Errors returned by the packet header parsers. A packet that fails to
// parse is dropped (RFC 9000 section 5.2), so these are plain sentinel
// values rather than transport errors: comparing them costs nothing and
// returning them never allocates.
var (
	ErrPacketTruncated     = errors.New("wire: packet truncated")
	ErrNotLongHeader       = errors.New("wire: not a long header packet")
	ErrNotShortHeader      = errors.New("wire: not a short header packet")
	ErrFixedBitZero        = errors.New("wire: fixed bit is zero")
	ErrConnIDTooLong       = errors.New("wire: connection ID longer than 20 bytes")
	ErrUnsupportedVersion  = errors.New("wire: unsupported QUIC version")
	ErrLengthBeyondPacket  = errors.New("wire: Length field exceeds datagram")
	ErrEmptyRetryToken     = errors.New("wire: Retry packet with empty token")
	ErrNotVersionNegotiate = errors.New("wire: not a Version Negotiation packet")
	ErrBadVersionList      = errors.New("wire: Version Negotiation version list empty or not a multiple of 4 bytes")
	ErrInvalidPacketNumber = errors.New("wire: invalid packet number length")
)
