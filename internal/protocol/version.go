package protocol

import "strconv"

// Version is a QUIC version number, as carried in long headers.
type Version uint32

// The versions this stack speaks.
const (
	// Version1 is QUIC version 1 (RFC 9000).
	Version1 Version = 0x00000001
	// Version2 is QUIC version 2 (RFC 9369).
	Version2 Version = 0x6b3343cf
)

// IsSupported reports whether the stack implements v.
func (v Version) IsSupported() bool { return v == Version1 || v == Version2 }

// IsReserved reports whether v follows the 0x?a?a?a?a pattern RFC 9000
// section 15 reserves to exercise version negotiation (GREASE).
func (v Version) IsReserved() bool { return v&0x0f0f0f0f == 0x0a0a0a0a }

// String returns "v1", "v2" or the hexadecimal value.
func (v Version) String() string {
	switch v {
	case Version1:
		return "v1"
	case Version2:
		return "v2"
	}
	return "0x" + strconv.FormatUint(uint64(v), 16)
}
