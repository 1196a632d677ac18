package quic

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/testhook"
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
	// awaitingPeerPhase: we updated keys and no packet of the peer's
	// opened with the new ones yet. Until one does, the peer may still
	// send only with the previous keys, so they are kept (an endpoint
	// with nothing to send would otherwise drop them before the peer
	// ever saw the update, and then read nothing the peer sends).
	awaitingPeerPhase bool
	// first1RTTPN is the number of the first application-space packet
	// sealed with 1-RTT keys (not 0-RTT), or -1 before there is one: only
	// an ACK of such a packet confirms a client's handshake.
	first1RTTPN int64
	// undecryptable are packets kept until their keys arrive;
	// retryLater: new read keys came, process them again.
	undecryptable []receivedPacket
	retryLater    bool
	// updateRequested: InitiateKeyUpdate asked for a key update that has
	// not happened yet.
	updateRequested bool
}

var errKeyUpdateNotAllowed = errors.New("quic: key update not allowed yet")

// initiateUpdate moves to the next 1-RTT key generation when RFC 9001
// section 6 allows it: handshake confirmed and a packet of the current
// phase acknowledged (confirmed says the handshake is).
func (k *keyState) initiateUpdate(confirmed bool, trace *connTracer) error {
	if k.app == nil || !confirmed || !k.phaseAcked {
		return errKeyUpdateNotAllowed
	}
	if err := k.app.NextGeneration(); err != nil {
		return err
	}
	if trace != nil {
		trace.keyUpdate(false, k.app.Generation())
	}
	k.phaseAcked = false
	k.dropPrevAt = time.Time{}
	k.awaitingPeerPhase = true
	return nil
}

// updateAfter is how many packets the current send keys may protect
// before this endpoint initiates a key update: three quarters of the
// confidentiality limit, or the interval a test set (testhook).
func (k *keyState) updateAfter() uint64 {
	n := k.app.Sealer().ConfidentialityLimit() / 4 * 3
	if every := testhook.KeyUpdateInterval(); every != 0 {
		n = min(n, every)
	}
	return n
}

// onPeerUpdate follows the peer's key update: a packet just opened with
// the next keys.
func (k *keyState) onPeerUpdate(now time.Time, pto time.Duration) {
	k.phaseAcked = false
	k.awaitingPeerPhase = false
	k.dropPreviousLater(now, pto)
}

// onCurrentPhase notes a packet of the peer's opened with the current
// keys: after our own update, the first one shows the peer follows.
func (k *keyState) onCurrentPhase(now time.Time, pto time.Duration) {
	if k.awaitingPeerPhase {
		k.awaitingPeerPhase = false
		k.dropPreviousLater(now, pto)
	}
}

// dropPreviousLater keeps the previous receive keys for delayed packets
// for three PTOs after the peer sent with the new ones (RFC 9001 section
// 6.5).
func (k *keyState) dropPreviousLater(now time.Time, pto time.Duration) {
	k.dropPrevAt = now.Add(3 * pto)
}
