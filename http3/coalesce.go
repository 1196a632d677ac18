package http3

import (
	"errors"
	"net"
	"net/http"
)

// Connection reuse across origins (RFC 9114 section 3.3): a request for
// an authority the Transport has no connection to may go on the
// connection of another origin when that connection is to the same
// address (the authority resolves to its remote address and port) and
// the certificate the server presented is valid for the new host (the
// chain was verified in the handshake, unless InsecureSkipVerify; the
// name is checked here). A server that does not serve the origin there
// answers 421 (Misdirected Request, RFC 9110 section 15.5.20): the
// request then goes again on a connection of its own when its body can
// be replayed.

// errMisdirected is the reason a 421 answer is replayed: the server did
// not process the request (RFC 9110 section 15.5.20).
var errMisdirected = &notProcessedError{errors.New("421 Misdirected Request on another origin's connection")}

// coalesceLocked returns a pooled connection that may serve authority,
// resolved to addr, with the request counted in it, or nil.
func (t *Transport) coalesceLocked(authority string, addr *net.UDPAddr) *ClientConn {
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		return nil
	}
	for _, cc := range t.conns {
		ra, ok := cc.qc.RemoteAddr().(*net.UDPAddr)
		if !ok || !ra.IP.Equal(addr.IP) || ra.Port != addr.Port || !cc.servesHost(host) {
			continue
		}
		if cc.startRequest() {
			return cc
		}
	}
	return nil
}

// servesHost reports whether the certificate of cc's server is valid for
// host. Without a completed handshake there is none to check yet.
func (cc *ClientConn) servesHost(host string) bool {
	select {
	case <-cc.qc.HandshakeComplete():
	default:
		return false
	}
	certs := cc.qc.ConnectionState().TLS.PeerCertificates
	return len(certs) > 0 && certs[0].VerifyHostname(host) == nil
}

// misdirected handles a 421 answer to a request sent on another origin's
// connection: it returns the request to send again on a connection of
// the request's own authority, or nil to return rsp as it is.
func (t *Transport) misdirected(rsp *http.Response, req *http.Request, cc *ClientConn, authority string) *http.Request {
	if rsp.StatusCode != http.StatusMisdirectedRequest || cc.authority == authority {
		return nil
	}
	next, _ := replayable(req, errMisdirected)
	if next == nil {
		return nil
	}
	rsp.Body.Close()
	t.mu.Lock()
	if t.conns[authority] == cc {
		delete(t.conns, authority)
	}
	t.mu.Unlock()
	return next
}
