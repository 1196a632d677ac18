package wire

import "github.com/turboretry/turboretry/internal/protocol"

// Version is the QUIC version a long header carries; the type is declared
// once, in internal/protocol.
type Version = protocol.Version

// The versions this stack speaks, for the packet code that names them here.
const (
	Version1 = protocol.Version1
	Version2 = protocol.Version2

	// versionNegotiation is the version field of Version Negotiation packets.
	versionNegotiation Version = 0
)
