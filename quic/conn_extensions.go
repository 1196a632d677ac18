package quic

import (
	"net/netip"
	"time"
)

// connExtensions is the connection state of features kept out of conn.go:
// compatible version negotiation (version_negotiation.go), the server's
// preferred address (preferred_address.go) and key updates the
// application asked for (key_update_request.go). Guarded by Conn.mu.
type connExtensions struct {
	// keyUpdateRequested: InitiateKeyUpdate asked for a key update that
	// has not happened yet.
	keyUpdateRequested bool
	// vn is the state of compatible version negotiation.
	vn versionNegotiation
	// pa is the state of the server's preferred address.
	pa preferredAddressState
	// local (server) is our address the client sends to on the current
	// path, when the socket reports it (local_address.go).
	local netip.Addr
}

// extensionTimers runs, with the connection's timers, what these features
// start once the handshake allows it.
func (c *Conn) extensionTimers(now time.Time) {
	c.requestedKeyUpdate(now)
	c.takeSwitchedAddress()
	c.startPreferredAddressMigration()
}
