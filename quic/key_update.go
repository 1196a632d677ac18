package quic

import (
	"errors"
	"time"
)

var errKeyUpdateNotAllowed = errors.New("quic: key update not allowed yet")

// initiateKeyUpdate moves to the next 1-RTT key generation when RFC 9001
// section 6 allows it: handshake confirmed and a packet of the current
// phase acknowledged.
func (c *Conn) initiateKeyUpdate(now time.Time) error {
	if c.app == nil || !c.hs.confirmed || !c.keyPhaseAcked {
		return errKeyUpdateNotAllowed
	}
	if err := c.app.NextGeneration(); err != nil {
		return err
	}
	if c.trace != nil {
		c.traceKeyUpdate(false, c.app.Generation())
	}
	c.onKeyUpdate(now)
	return nil
}

// onKeyUpdate follows a key update by either side.
func (c *Conn) onKeyUpdate(now time.Time) {
	c.keyPhaseAcked = false
	// Keep the old receive keys for delayed packets for three PTOs
	// (RFC 9001 section 6.5).
	c.dropKeysAt = now.Add(3 * c.ptoLocked())
}
