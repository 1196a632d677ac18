package quictype

import (
	"encoding/hex"
	"fmt"
)

// MaxConnectionIDLen is the longest connection ID QUIC version 1 allows
// (RFC 9000 section 17.2).
const MaxConnectionIDLen = 20

// A ConnectionID is a QUIC connection ID of 0 to 20 bytes, held by value:
// it is comparable and copying it never allocates. As in quic-go, the zero
// value is not a connection ID (Valid reports false); the zero-length ID
// is ConnectionIDFromBytes(nil).
type ConnectionID struct {
	b [MaxConnectionIDLen]byte
	l uint8 // length + 1; 0 for the zero value
}

// ConnectionIDFromBytes returns the ConnectionID with the bytes of b
// (copied). It panics if b is longer than 20 bytes.
func ConnectionIDFromBytes(b []byte) ConnectionID {
	if len(b) > MaxConnectionIDLen {
		panic(fmt.Sprintf("quic: connection ID of %d bytes, longer than %d", len(b), MaxConnectionIDLen))
	}
	var c ConnectionID
	c.l = uint8(copy(c.b[:], b)) + 1
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

// Bytes returns the bytes of c.
func (c ConnectionID) Bytes() []byte { return c.b[:c.Len()] }

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

// An ArbitraryLenConnectionID is a connection ID of any length, as Version
// Negotiation packets may carry (RFC 8999 section 6).
type ArbitraryLenConnectionID []byte

// Len returns the length in bytes.
func (c ArbitraryLenConnectionID) Len() int { return len(c) }

// Bytes returns the bytes.
func (c ArbitraryLenConnectionID) Bytes() []byte { return c }

// String returns the ID in hexadecimal, or "(empty)".
func (c ArbitraryLenConnectionID) String() string {
	if len(c) == 0 {
		return "(empty)"
	}
	return hex.EncodeToString(c)
}

// A StatelessResetToken is the 16-byte token of RFC 9000 section 10.3.
type StatelessResetToken [16]byte
