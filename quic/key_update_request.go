package quic

// InitiateKeyUpdate asks for a 1-RTT key update (RFC 9001 section 6): the
// connection moves to the next key generation as soon as RFC 9001 allows
// it, once the handshake is confirmed and a packet protected with the
// current keys was acknowledged, and the peer follows. One call asks for
// one update; calls before it happened ask for that same one. It fails
// only when the connection is closed. quic-go has no such method (its
// interop client lowers an internal update interval instead).
func (c *Conn) InitiateKeyUpdate() error {
	c.mu.Lock()
	if c.close.err != nil {
		err := c.close.err
		c.mu.Unlock()
		return err
	}
	c.keys.updateRequested = true
	c.mu.Unlock()
	c.wake()
	return nil
}

// requestedUpdate performs the key update InitiateKeyUpdate asked for,
// once it is allowed.
func (k *keyState) requestedUpdate(confirmed bool, trace *connTracer) {
	if k.updateRequested && k.initiateUpdate(confirmed, trace) == nil {
		k.updateRequested = false
	}
}
