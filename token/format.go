package token

import (
	"encoding/binary"
	"strconv"
)

// Sizes of the token format.
const (
	HeaderLen     = 21 // flags (1) || TID (8) || T (8) || R (4)
	TagLen        = 16 // AES-GCM tag
	MaxCIDLen     = 20 // RFC 9000 connection ID limit
	TIDLen        = 8
	MaxPayloadLen = 1 + 16 + 2 + 1 + MaxCIDLen + 1 + MaxCIDLen
	// MinTokenLen is the shortest well-formed token: a new_token token for
	// an IPv4 client.
	MinTokenLen = HeaderLen + 1 + 4 + TagLen
	// MaxTokenLen is the longest well-formed token: a retry token for an
	// IPv6 client with two 20-byte CIDs.
	MaxTokenLen = HeaderLen + MaxPayloadLen + TagLen
)

// Source says who issued a token (header bits 7-6).
type Source uint8

// Token sources.
const (
	SourceHost  Source = 1
	SourceAgent Source = 2
)

// String returns "host", "agent" or "source(N)" for an undefined value.
func (s Source) String() string {
	switch s {
	case SourceHost:
		return "host"
	case SourceAgent:
		return "agent"
	}
	return "source(" + strconv.Itoa(int(s)) + ")"
}

func (s Source) valid() bool { return s == SourceHost || s == SourceAgent }

// ParseSource parses "host" or "agent".
func ParseSource(s string) (Source, bool) {
	switch s {
	case "host":
		return SourceHost, true
	case "agent":
		return SourceAgent, true
	}
	return 0, false
}

// Type says what a token is for (header bits 5-4).
type Type uint8

// Token types. TypeAny is not a wire value: passed to a Validator it accepts
// either type.
const (
	TypeAny      Type = 0
	TypeRetry    Type = 1
	TypeNewToken Type = 2
)

// String returns "retry", "new_token", "any" or "type(N)".
func (t Type) String() string {
	switch t {
	case TypeAny:
		return "any"
	case TypeRetry:
		return "retry"
	case TypeNewToken:
		return "new_token"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

func (t Type) valid() bool { return t == TypeRetry || t == TypeNewToken }

// ParseType parses "retry" or "new_token".
func ParseType(s string) (Type, bool) {
	switch s {
	case "retry":
		return TypeRetry, true
	case "new_token":
		return TypeNewToken, true
	}
	return 0, false
}

// header is the decoded plaintext header.
type header struct {
	source Source
	typ    Type
	keyID  uint8
	tid    [TIDLen]byte
	t      uint64
	r      uint32
}

func putHeader(b *[HeaderLen]byte, h *header) {
	b[0] = byte(h.source)<<6 | byte(h.typ)<<4 | h.keyID&0x0f
	copy(b[1:9], h.tid[:])
	binary.BigEndian.PutUint64(b[9:17], h.t)
	binary.BigEndian.PutUint32(b[17:21], h.r)
}

// parseHeader decodes the first HeaderLen bytes of b, which the caller has
// length-checked. It does not judge the flag values.
func parseHeader(b []byte) header {
	var h header
	h.source = Source(b[0] >> 6)
	h.typ = Type(b[0] >> 4 & 3)
	h.keyID = b[0] & 0x0f
	copy(h.tid[:], b[1:9])
	h.t = binary.BigEndian.Uint64(b[9:17])
	h.r = binary.BigEndian.Uint32(b[17:21])
	return h
}
