package connid

import (
	"encoding/hex"
	"errors"
)

// MaxLen is the longest connection ID QUIC version 1 allows (RFC 9000
// section 17.2).
const MaxLen = 20

// ErrTooLong is returned for a connection ID longer than MaxLen bytes.
var ErrTooLong = errors.New("connid: connection ID longer than 20 bytes")

// ConnectionID is a connection ID held by value. It is comparable, so it
// can be a map key, and copying it never allocates.
type ConnectionID struct {
	b [MaxLen]byte
	n uint8
}

// FromBytes returns the connection ID with the bytes of b (copied).
func FromBytes(b []byte) (ConnectionID, error) {
	var c ConnectionID
	if len(b) > MaxLen {
		return c, ErrTooLong
	}
	c.n = uint8(copy(c.b[:], b))
	return c, nil
}

// Len returns the length of c in bytes.
func (c ConnectionID) Len() int { return int(c.n) }

// Bytes returns a copy of the bytes of c; use AppendTo on hot paths.
func (c ConnectionID) Bytes() []byte {
	return append([]byte(nil), c.b[:c.n]...)
}

// AppendTo appends the bytes of c to b.
func (c ConnectionID) AppendTo(b []byte) []byte {
	return append(b, c.b[:c.n]...)
}

// Equal reports whether c holds exactly the bytes of b.
func (c ConnectionID) Equal(b []byte) bool {
	return string(c.b[:c.n]) == string(b)
}

// String returns c in lower-case hexadecimal ("" for a zero-length ID).
func (c ConnectionID) String() string {
	return hex.EncodeToString(c.b[:c.n])
}
