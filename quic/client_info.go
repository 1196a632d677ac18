package quic

import "net"

// ClientInfo describes a connection attempt to a server, for
// Config.GetConfigForClient and Transport.ConnContext, as in quic-go.
type ClientInfo struct {
	// RemoteAddr is the address the client's Initial came from. Unless
	// AddrVerified is set, it is not validated and may be spoofed.
	RemoteAddr net.Addr
	// AddrVerified says that a valid token (from a Retry or a NEW_TOKEN
	// frame) proved the client's address.
	AddrVerified bool
}
