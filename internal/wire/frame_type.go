package wire

import "strconv"

// FrameType is a QUIC frame type (RFC 9000 section 12.4, RFC 9221,
// draft-ietf-quic-reliable-stream-reset).
type FrameType uint64

// Frame types. STREAM frames use 0x08-0x0f, with the low three bits as
// flags; ParseFrame reports all of them as FrameTypeStream. DATAGRAM
// frames (0x30, 0x31) are likewise reported as FrameTypeDatagram.
const (
	FrameTypePadding            FrameType = 0x00
	FrameTypePing               FrameType = 0x01
	FrameTypeAck                FrameType = 0x02
	FrameTypeAckECN             FrameType = 0x03
	FrameTypeResetStream        FrameType = 0x04
	FrameTypeStopSending        FrameType = 0x05
	FrameTypeCrypto             FrameType = 0x06
	FrameTypeNewToken           FrameType = 0x07
	FrameTypeStream             FrameType = 0x08
	FrameTypeMaxData            FrameType = 0x10
	FrameTypeMaxStreamData      FrameType = 0x11
	FrameTypeMaxStreamsBidi     FrameType = 0x12
	FrameTypeMaxStreamsUni      FrameType = 0x13
	FrameTypeDataBlocked        FrameType = 0x14
	FrameTypeStreamDataBlocked  FrameType = 0x15
	FrameTypeStreamsBlockedBidi FrameType = 0x16
	FrameTypeStreamsBlockedUni  FrameType = 0x17
	FrameTypeNewConnectionID    FrameType = 0x18
	FrameTypeRetireConnectionID FrameType = 0x19
	FrameTypePathChallenge      FrameType = 0x1a
	FrameTypePathResponse       FrameType = 0x1b
	FrameTypeConnectionClose    FrameType = 0x1c // transport error
	FrameTypeConnectionCloseApp FrameType = 0x1d // application error
	FrameTypeHandshakeDone      FrameType = 0x1e
	FrameTypeResetStreamAt      FrameType = 0x24 // draft-ietf-quic-reliable-stream-reset
	FrameTypeDatagram           FrameType = 0x30 // RFC 9221, no Length field
	FrameTypeDatagramWithLen    FrameType = 0x31 // RFC 9221, with Length field
)

// STREAM frame type flag bits (RFC 9000 section 19.8).
const (
	streamFlagFin = 0x01
	streamFlagLen = 0x02
	streamFlagOff = 0x04
)

// MaxStreamCount is the largest stream count a MAX_STREAMS or
// STREAMS_BLOCKED frame or an initial_max_streams parameter may carry.
const MaxStreamCount = 1 << 60

// canonical folds flag variants onto their base type.
func (t FrameType) canonical() FrameType {
	switch {
	case t >= 0x08 && t <= 0x0f:
		return FrameTypeStream
	case t == FrameTypeDatagramWithLen:
		return FrameTypeDatagram
	}
	return t
}

// IsKnown reports whether t is a frame type this package parses.
func (t FrameType) IsKnown() bool {
	return t <= FrameTypeHandshakeDone || t == FrameTypeResetStreamAt || t == FrameTypeDatagram || t == FrameTypeDatagramWithLen
}

// IsAckEliciting reports whether a packet containing this frame must be
// acknowledged: every frame except ACK, PADDING and CONNECTION_CLOSE
// (RFC 9000 section 13.2).
func (t FrameType) IsAckEliciting() bool {
	switch t {
	case FrameTypePadding, FrameTypeAck, FrameTypeAckECN,
		FrameTypeConnectionClose, FrameTypeConnectionCloseApp:
		return false
	}
	return true
}

// IsProbing reports whether t is a probing frame (RFC 9000 section 9.1):
// a packet of only probing frames does not migrate the connection.
func (t FrameType) IsProbing() bool {
	switch t {
	case FrameTypePadding, FrameTypePathChallenge, FrameTypePathResponse, FrameTypeNewConnectionID:
		return true
	}
	return false
}

// AllowedIn reports whether a frame of type t may appear in a packet of
// type pt (RFC 9000 section 12.4, table 3, and section 17.2.3 for 0-RTT;
// RFC 9221 section 4 for DATAGRAM). A frame that is not allowed is a
// connection error of type PROTOCOL_VIOLATION.
func (t FrameType) AllowedIn(pt PacketType) bool {
	switch pt {
	case PacketTypeInitial, PacketTypeHandshake:
		switch t {
		case FrameTypePadding, FrameTypePing, FrameTypeAck, FrameTypeAckECN,
			FrameTypeCrypto, FrameTypeConnectionClose:
			return true
		}
		return false
	case PacketType0RTT:
		switch t {
		case FrameTypeAck, FrameTypeAckECN, FrameTypeCrypto, FrameTypeHandshakeDone,
			FrameTypeNewToken, FrameTypePathResponse, FrameTypeRetireConnectionID:
			return false
		}
		return t.IsKnown()
	case PacketType1RTT:
		return t.IsKnown()
	}
	return false
}

var frameTypeNames = [...]string{
	FrameTypePadding:            "PADDING",
	FrameTypePing:               "PING",
	FrameTypeAck:                "ACK",
	FrameTypeAckECN:             "ACK_ECN",
	FrameTypeResetStream:        "RESET_STREAM",
	FrameTypeStopSending:        "STOP_SENDING",
	FrameTypeCrypto:             "CRYPTO",
	FrameTypeNewToken:           "NEW_TOKEN",
	0x08:                        "STREAM",
	0x09:                        "STREAM",
	0x0a:                        "STREAM",
	0x0b:                        "STREAM",
	0x0c:                        "STREAM",
	0x0d:                        "STREAM",
	0x0e:                        "STREAM",
	0x0f:                        "STREAM",
	FrameTypeMaxData:            "MAX_DATA",
	FrameTypeMaxStreamData:      "MAX_STREAM_DATA",
	FrameTypeMaxStreamsBidi:     "MAX_STREAMS_BIDI",
	FrameTypeMaxStreamsUni:      "MAX_STREAMS_UNI",
	FrameTypeDataBlocked:        "DATA_BLOCKED",
	FrameTypeStreamDataBlocked:  "STREAM_DATA_BLOCKED",
	FrameTypeStreamsBlockedBidi: "STREAMS_BLOCKED_BIDI",
	FrameTypeStreamsBlockedUni:  "STREAMS_BLOCKED_UNI",
	FrameTypeNewConnectionID:    "NEW_CONNECTION_ID",
	FrameTypeRetireConnectionID: "RETIRE_CONNECTION_ID",
	FrameTypePathChallenge:      "PATH_CHALLENGE",
	FrameTypePathResponse:       "PATH_RESPONSE",
	FrameTypeConnectionClose:    "CONNECTION_CLOSE",
	FrameTypeConnectionCloseApp: "CONNECTION_CLOSE_APP",
	FrameTypeHandshakeDone:      "HANDSHAKE_DONE",
}

// String returns the RFC name of the frame type.
func (t FrameType) String() string {
	if t < FrameType(len(frameTypeNames)) {
		return frameTypeNames[t]
	}
	if t == FrameTypeResetStreamAt {
		return "RESET_STREAM_AT"
	}
	if t.canonical() == FrameTypeDatagram {
		return "DATAGRAM"
	}
	return "0x" + strconv.FormatUint(uint64(t), 16)
}
