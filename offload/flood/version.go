package flood

import "github.com/turboretry/turboretry/internal/protocol"

// Version is the QUIC version a generator's Initials carry; the type is
// declared once, in internal/protocol.
type Version = protocol.Version

// The versions the generator can protect Initials for.
const (
	// Version1 is QUIC version 1 (RFC 9000, RFC 9001).
	Version1 = protocol.Version1
	// Version2 is QUIC version 2 (RFC 9369).
	Version2 = protocol.Version2
)
