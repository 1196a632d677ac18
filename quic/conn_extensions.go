package quic

import "net/netip"

// connExtensions is the connection state of features kept out of conn.go:
// compatible version negotiation (version_negotiation.go), the server's
// preferred address (preferred_address.go) and our address on the
// current path (local_address.go). Guarded by Conn.mu.
type connExtensions struct {
	// vn is the state of compatible version negotiation.
	vn versionNegotiation
	// pa is the state of the server's preferred address.
	pa preferredAddressState
	// local (server) is our address the client sends to on the current
	// path, when the socket reports it (local_address.go).
	local netip.Addr
}
