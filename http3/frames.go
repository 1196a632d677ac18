package http3

import "github.com/turboretry/turboretry/internal/wire"

// frameHeader is the type and payload length that start every HTTP/3 frame
// (RFC 9114 section 7.1).
type frameHeader struct {
	Type   FrameType
	Length uint64
}

// appendFrameHeader appends the type and length varints of a frame.
func appendFrameHeader(b []byte, t FrameType, length uint64) []byte {
	b = wire.AppendVarint(b, uint64(t))
	return wire.AppendVarint(b, length)
}

// frame is a parsed HTTP/3 frame that can serialise itself.
type frame interface {
	append(b []byte) []byte
}

// dataFrame is the header of a DATA frame (section 7.2.1). The payload is
// streamed: writers append the header and then write Length bytes, readers
// take the payload through frameReader.Read.
type dataFrame struct {
	Length uint64
}

func (f dataFrame) append(b []byte) []byte {
	return appendFrameHeader(b, frameTypeData, f.Length)
}

// headersFrame is a HEADERS frame (section 7.2.2) carrying an encoded field
// section.
type headersFrame struct {
	FieldSection []byte
}

func (f headersFrame) append(b []byte) []byte {
	b = appendFrameHeader(b, frameTypeHeaders, uint64(len(f.FieldSection)))
	return append(b, f.FieldSection...)
}

// cancelPushFrame is a CANCEL_PUSH frame (section 7.2.3).
type cancelPushFrame struct {
	PushID uint64
}

func (f cancelPushFrame) append(b []byte) []byte {
	return appendSingleVarintFrame(b, frameTypeCancelPush, f.PushID)
}

// pushPromiseFrame is a PUSH_PROMISE frame (section 7.2.5).
type pushPromiseFrame struct {
	PushID       uint64
	FieldSection []byte
}

func (f pushPromiseFrame) append(b []byte) []byte {
	n := uint64(wire.VarintLen(f.PushID) + len(f.FieldSection))
	b = appendFrameHeader(b, frameTypePushPromise, n)
	b = wire.AppendVarint(b, f.PushID)
	return append(b, f.FieldSection...)
}

// goAwayFrame is a GOAWAY frame (section 7.2.6). ID is a client-initiated
// bidirectional stream ID when sent by a server, a push ID when sent by a
// client.
type goAwayFrame struct {
	ID uint64
}

func (f goAwayFrame) append(b []byte) []byte {
	return appendSingleVarintFrame(b, frameTypeGoAway, f.ID)
}

// maxPushIDFrame is a MAX_PUSH_ID frame (section 7.2.7).
type maxPushIDFrame struct {
	PushID uint64
}

func (f maxPushIDFrame) append(b []byte) []byte {
	return appendSingleVarintFrame(b, frameTypeMaxPushID, f.PushID)
}

func appendSingleVarintFrame(b []byte, t FrameType, v uint64) []byte {
	b = appendFrameHeader(b, t, uint64(wire.VarintLen(v)))
	return wire.AppendVarint(b, v)
}

// parseSingleVarintPayload parses the payload of CANCEL_PUSH, GOAWAY or
// MAX_PUSH_ID: exactly one varint, nothing more and nothing less
// (section 7.1), else H3_FRAME_ERROR.
func parseSingleVarintPayload(t FrameType, p []byte) (uint64, error) {
	v, n, err := wire.ParseVarint(p)
	if err != nil {
		return 0, newError(ErrCodeFrameError, "%s frame payload is truncated", t)
	}
	if n != len(p) {
		return 0, newError(ErrCodeFrameError, "%s frame has %d bytes after its ID", t, len(p)-n)
	}
	return v, nil
}

// parsePushPromisePayload parses a PUSH_PROMISE payload. The field section
// aliases p.
func parsePushPromisePayload(p []byte) (pushPromiseFrame, error) {
	id, n, err := wire.ParseVarint(p)
	if err != nil {
		return pushPromiseFrame{}, newError(ErrCodeFrameError, "PUSH_PROMISE frame payload is truncated")
	}
	return pushPromiseFrame{PushID: id, FieldSection: p[n:]}, nil
}
