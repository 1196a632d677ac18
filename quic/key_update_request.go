package quic

import "time"

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
	c.x.keyUpdateRequested = true
	c.mu.Unlock()
	c.wake()
	return nil
}

// requestedKeyUpdate performs the key update InitiateKeyUpdate asked for,
// once it is allowed.
func (c *Conn) requestedKeyUpdate(now time.Time) {
	if c.x.keyUpdateRequested && c.initiateKeyUpdate(now) == nil {
		c.x.keyUpdateRequested = false
	}
}
