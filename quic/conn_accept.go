package quic

// A server connection's way into its listener's accept queue, and out of
// it when the listener closes first (server.go holds the listener).

// refuseIfServerClosed closes a server connection its listener has not
// handed out when the listener closed; it runs before every send.
func (c *Conn) refuseIfServerClosed() {
	s := c.server
	if s == nil || c.hs.queuedForAccept || c.close.err != nil {
		return
	}
	select {
	case <-s.closed:
		c.hs.queuedForAccept = true // it never will be
		s.notPending(c)
		c.t.countRefused(RefusedServerClosed)
		c.close.refusedAtClose = true
		c.closeLocal(&TransportError{ErrorCode: ConnectionRefused, ErrorMessage: "server closed"})
	default:
	}
}

// queueForAccept hands a server connection to Accept: an EarlyListener's
// once 1-RTT keys exist (early), a Listener's at handshake completion.
// Handing it out ends none of the limits it holds (server_limits.go).
func (c *Conn) queueForAccept(early bool) {
	s := c.server
	if s == nil || c.hs.queuedForAccept || early != s.early {
		return
	}
	c.hs.queuedForAccept = true
	s.notPending(c)
	select {
	case <-s.closed:
		c.t.countRefused(RefusedServerClosed)
		c.close.refusedAtClose = true
		c.closeLocal(&TransportError{ErrorCode: ConnectionRefused, ErrorMessage: "server closed"})
		return
	default:
	}
	select {
	case s.acceptCh <- c:
	default:
		c.t.countRefused(RefusedAcceptQueueFull)
		c.closeLocal(&TransportError{ErrorCode: ConnectionRefused, ErrorMessage: "accept queue full"})
	}
}
