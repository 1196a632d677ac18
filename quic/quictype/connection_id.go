package quictype

import (
	"encoding/hex"

	"github.com/turboretry/turboretry/internal/protocol"
)

// MaxConnectionIDLen is the longest connection ID QUIC version 1 allows
// (RFC 9000 section 17.2).
const MaxConnectionIDLen = protocol.MaxConnectionIDLen

// A ConnectionID is a QUIC connection ID of 0 to 20 bytes, held by value.
// As in quic-go, the zero value is not a connection ID (Valid reports
// false); the zero-length ID is ConnectionIDFromBytes(nil).
type ConnectionID = protocol.ConnectionID

// ConnectionIDFromBytes returns the ConnectionID with the bytes of b
// (copied). It panics if b is longer than 20 bytes.
func ConnectionIDFromBytes(b []byte) ConnectionID { return protocol.ConnectionIDFromBytes(b) }

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
