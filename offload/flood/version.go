package flood

import "github.com/turboretry/turboretry/internal/wire"

// Version is the QUIC version a generator's Initials carry.
type Version uint32

// The versions the generator can protect Initials for.
const (
	// Version1 is QUIC version 1 (RFC 9000, RFC 9001).
	Version1 = Version(wire.Version1)
	// Version2 is QUIC version 2 (RFC 9369).
	Version2 = Version(wire.Version2)
)

// IsSupported reports whether v is Version1 or Version2.
func (v Version) IsSupported() bool { return wire.Version(v).IsSupported() }

// String returns "v1", "v2" or the hexadecimal value.
func (v Version) String() string { return wire.Version(v).String() }
