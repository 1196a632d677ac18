package protocol

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// MaxConnectionIDLen is the longest connection ID QUIC versions 1 and 2
// allow (RFC 9000 section 17.2).
const MaxConnectionIDLen = 20

// ErrConnectionIDTooLong is returned by ParseConnectionID for more than
// MaxConnectionIDLen bytes.
var ErrConnectionIDTooLong = errors.New("protocol: connection ID longer than 20 bytes")

// A ConnectionID is a QUIC connection ID of 0 to 20 bytes, held by value:
// it is comparable, so it can be a map key, and copying it never
// allocates. As in quic-go, the zero value is not a connection ID (Valid
// reports false; it has no bytes); the zero-length ID is
// ConnectionIDFromBytes(nil).
type ConnectionID struct {
	b [MaxConnectionIDLen]byte
	l uint8 // length + 1; 0 for the zero value
}

// ParseConnectionID returns the ConnectionID with the bytes of b (copied),
// or ErrConnectionIDTooLong.
func ParseConnectionID(b []byte) (ConnectionID, error) {
	var c ConnectionID
	if len(b) > MaxConnectionIDLen {
		return c, ErrConnectionIDTooLong
	}
	c.l = uint8(copy(c.b[:], b)) + 1
	return c, nil
}

// ConnectionIDFromBytes returns the ConnectionID with the bytes of b
// (copied). It panics if b is longer than 20 bytes, as quic-go's does;
// code that takes b from the network uses ParseConnectionID.
func ConnectionIDFromBytes(b []byte) ConnectionID {
	c, err := ParseConnectionID(b)
	if err != nil {
		panic(fmt.Sprintf("quic: connection ID of %d bytes, longer than %d", len(b), MaxConnectionIDLen))
	}
	return c
}

// Valid reports whether c is a connection ID, possibly of zero length, as
// opposed to the zero value.
func (c ConnectionID) Valid() bool { return c.l > 0 }

// Len returns the length of c in bytes (0 for the zero value).
func (c ConnectionID) Len() int {
	if c.l == 0 {
		return 0
	}
	return int(c.l) - 1
}

// Bytes returns the bytes of c, a copy that the caller may keep; hot
// paths use AppendTo, which does not allocate.
func (c ConnectionID) Bytes() []byte { return c.b[:c.Len()] }

// AppendTo appends the bytes of c to b.
func (c ConnectionID) AppendTo(b []byte) []byte { return append(b, c.b[:c.Len()]...) }

// Equal reports whether c holds exactly the bytes of b.
func (c ConnectionID) Equal(b []byte) bool { return string(c.b[:c.Len()]) == string(b) }

// String returns c in lower-case hexadecimal, "(empty)" for the
// zero-length ID and "(invalid)" for the zero value.
func (c ConnectionID) String() string {
	switch c.l {
	case 0:
		return "(invalid)"
	case 1:
		return "(empty)"
	}
	return hex.EncodeToString(c.Bytes())
}
