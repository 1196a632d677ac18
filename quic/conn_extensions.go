package quic

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
}
