package fileserver

import "context"

// ConnInfo is what the transport knows about how a connection was admitted.
// The QUIC listener stores it in each request's context with WithConnInfo;
// TCP connections have the zero value.
type ConnInfo struct {
	RetryValidated bool // the client's address was proven by a Retry token
	TokenValidated bool // ... or by a NEW_TOKEN token from an earlier connection
	ZeroRTT        bool // the request arrived in 0-RTT data
	// HandshakeComplete, on QUIC connections, is closed once the
	// connection's handshake completed: a handler may hold a request
	// that came in 0-RTT until then. Nil on TCP.
	HandshakeComplete <-chan struct{}
}

// connInfoKey is the context key for ConnInfo; a private type, so no other
// package can collide with it.
type connInfoKey struct{}

// WithConnInfo returns a context carrying ci, for the access log, metrics
// and the whoami endpoint.
func WithConnInfo(ctx context.Context, ci ConnInfo) context.Context {
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// ConnInfoFromContext returns the ConnInfo stored by WithConnInfo, or the
// zero value.
func ConnInfoFromContext(ctx context.Context) ConnInfo {
	ci, _ := ctx.Value(connInfoKey{}).(ConnInfo)
	return ci
}
