package quic

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
)

// keyState is the 1-RTT keys and the packets waiting for keys. Guarded
// by Conn.mu. (The Initial and Handshake keys are in Conn.spaces.)
type keyState struct {
	app *handshake.AppKeys // nil until the handshake made them
	// phaseAcked: a packet sealed with the current 1-RTT keys was
	// acknowledged (RFC 9001 section 6.1 allows the next update then);
	// dropPrevAt is when to drop the previous receive keys.
	phaseAcked bool
	dropPrevAt time.Time
	// first1RTTPN is the number of the first application-space packet
	// sealed with 1-RTT keys (not 0-RTT), or -1 before there is one: only
	// an ACK of such a packet confirms a client's handshake.
	first1RTTPN int64
	// undecryptable are packets kept until their keys arrive;
	// retryLater: new read keys came, process them again.
	undecryptable []receivedPacket
	retryLater    bool
}

var errKeyUpdateNotAllowed = errors.New("quic: key update not allowed yet")

// initiateKeyUpdate moves to the next 1-RTT key generation when RFC 9001
// section 6 allows it: handshake confirmed and a packet of the current
// phase acknowledged.
func (c *Conn) initiateKeyUpdate(now time.Time) error {
	if c.keys.app == nil || !c.hs.confirmed || !c.keys.phaseAcked {
		return errKeyUpdateNotAllowed
	}
	if err := c.keys.app.NextGeneration(); err != nil {
		return err
	}
	if c.trace != nil {
		c.traceKeyUpdate(false, c.keys.app.Generation())
	}
	c.onKeyUpdate(now)
	return nil
}

// onKeyUpdate follows a key update by either side.
func (c *Conn) onKeyUpdate(now time.Time) {
	c.keys.phaseAcked = false
	// Keep the old receive keys for delayed packets for three PTOs
	// (RFC 9001 section 6.5).
	c.keys.dropPrevAt = now.Add(3 * c.ptoLocked())
}
