package http3

import (
	"fmt"
	"io"

	"github.com/turboretry/turboretry/internal/wire"
)

// StreamType is the type that starts every unidirectional stream
// (RFC 9114 section 6.2).
type StreamType uint64

// Unidirectional stream types (RFC 9114 section 6.2, RFC 9204 section 4.2).
const (
	streamTypeControl      StreamType = 0x00
	streamTypePush         StreamType = 0x01
	streamTypeQPACKEncoder StreamType = 0x02
	streamTypeQPACKDecoder StreamType = 0x03
)

// String returns the RFC name of the stream type.
func (t StreamType) String() string {
	switch t {
	case streamTypeControl:
		return "control"
	case streamTypePush:
		return "push"
	case streamTypeQPACKEncoder:
		return "QPACK encoder"
	case streamTypeQPACKDecoder:
		return "QPACK decoder"
	}
	if isReservedCodePoint(uint64(t)) {
		return fmt.Sprintf("reserved stream type %#x", uint64(t))
	}
	return fmt.Sprintf("unknown stream type %#x", uint64(t))
}

// readStreamType reads the stream type varint at the start of a
// unidirectional stream. A stream that ends before a complete type is
// returned as io.EOF (section 6.2: such a stream carries nothing to act on).
func readStreamType(r io.Reader) (StreamType, error) {
	fr := frameReader{r: r}
	fr.br, _ = r.(io.ByteReader)
	v, err := fr.readVarint(true)
	if err != nil {
		if errorCode(err) == ErrCodeFrameError {
			return 0, io.EOF
		}
		return 0, err
	}
	return StreamType(v), nil
}

// appendStreamType appends the stream type that opens a unidirectional
// stream.
func appendStreamType(b []byte, t StreamType) []byte {
	return wire.AppendVarint(b, uint64(t))
}

// uniStreamSet tracks the unidirectional streams the peer opened and
// decides what to do with a new one (section 6.2).
type uniStreamSet struct {
	isClient bool // this endpoint is the client
	seen     [4]bool
}

// accept classifies a new peer stream of type t. ignore is true for
// stream types this endpoint does not handle: the caller stops reading them
// with STOP_SENDING H3_STREAM_CREATION_ERROR. err is a connection error:
// a second control or QPACK stream, or a push stream sent by a client.
func (s *uniStreamSet) accept(t StreamType) (ignore bool, err error) {
	switch t {
	case streamTypeControl, streamTypeQPACKEncoder, streamTypeQPACKDecoder:
		if s.seen[t] {
			return false, newError(ErrCodeStreamCreationError, "peer opened a second %s stream", t)
		}
		s.seen[t] = true
		return false, nil
	case streamTypePush:
		if !s.isClient {
			return false, newError(ErrCodeStreamCreationError, "client opened a push stream")
		}
		return false, nil
	}
	return true, nil
}
