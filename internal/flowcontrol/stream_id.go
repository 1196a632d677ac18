package flowcontrol

import "github.com/turboretry/turboretry/internal/protocol"

// Direction is bit 1 of the stream ID.
type Direction uint8

// Stream directions.
const (
	Bidi Direction = 0
	Uni  Direction = 2
)

const (
	// MaxStreamID is the largest stream ID, the largest varint (2^62-1).
	MaxStreamID = 1<<62 - 1
	// MaxStreamCount is the largest valid MAX_STREAMS value (2^60): with
	// it every stream ID of a type up to 2^62-1 can be opened.
	MaxStreamCount = 1 << 60
	// MaxOffset is the largest stream offset or data limit (2^62-1).
	MaxOffset = 1<<62 - 1
)

// Initiator returns who opened stream id: bit 0 of a stream ID is set for
// the streams a server opens (RFC 9000 section 2.1).
func Initiator(id uint64) protocol.Perspective {
	if id&1 == 0 {
		return protocol.PerspectiveClient
	}
	return protocol.PerspectiveServer
}

// initiatorBit is bit 0 of the IDs of the streams p opens.
func initiatorBit(p protocol.Perspective) uint64 {
	if p == protocol.PerspectiveServer {
		return 1
	}
	return 0
}

// DirectionOf returns whether stream id is bidirectional or unidirectional.
func DirectionOf(id uint64) Direction { return Direction(id & 2) }

// StreamNum returns the 0-based index of id among the streams of its type:
// stream 8 is the third client-initiated bidirectional stream, number 2.
func StreamNum(id uint64) uint64 { return id >> 2 }

// NthStreamID returns the ID of stream number n (0-based) of the given type.
func NthStreamID(n uint64, initiator protocol.Perspective, dir Direction) (uint64, error) {
	if n >= MaxStreamCount {
		return 0, ErrStreamNumTooBig
	}
	return n<<2 | uint64(dir) | initiatorBit(initiator), nil
}

// LocalCanSend reports whether the endpoint local may send data on stream
// id: any bidirectional stream, and unidirectional streams it opened.
func LocalCanSend(id uint64, local protocol.Perspective) bool {
	return DirectionOf(id) == Bidi || Initiator(id) == local
}

// LocalCanReceive reports whether the endpoint local may receive data on
// stream id: any bidirectional stream, and the peer's unidirectional ones.
func LocalCanReceive(id uint64, local protocol.Perspective) bool {
	return DirectionOf(id) == Bidi || Initiator(id) != local
}
