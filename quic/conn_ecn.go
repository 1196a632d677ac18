package quic

import (
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

// Explicit Congestion Notification (RFC 9000 section 13.4, RFC 9002
// section 7.1). We mark our datagrams ECT(0) and count the marks of the
// peer's packets in ACK_ECN frames. Marking starts with a testing period
// of ecnTestingPackets datagrams; the peer's ECN counts must then account
// for every marked packet it acknowledges, or the path (or the peer)
// mangles ECN and we stop marking. Once validated, an increase of the
// peer's CE count is a congestion event, as a loss would be, but without
// the retransmission.

// ecnTestingPackets is how many datagrams we mark before any ACK
// validated ECN (RFC 9000 section 13.4.2 suggests 10).
const ecnTestingPackets = 10

type ecnState uint8

const (
	ecnTesting ecnState = iota // marking the first datagrams
	ecnUnknown                 // testing done, waiting for the ACKs to validate
	ecnCapable                 // validated: every datagram is marked
	ecnFailed                  // the counts did not add up: no more marks
)

// ecnTracker is a connection's ECN validation state.
type ecnTracker struct {
	state    ecnState
	marked   int // datagrams marked during testing
	lostTest int // ack-eliciting packets marked during testing and lost
	sentTest int // ack-eliciting packets marked during testing
	// The peer's counts in the last ACK_ECN frame of each space.
	ect0, ect1, ce [protocol.NumSpaces]uint64
	ceEvents       uint64 // congestion events from CE counts
}

// ecnCodepoint is the mark for the next datagram, and whether it is one
// of the testing period; onECNMarked counts it once it was built.
func (c *Conn) ecnCodepoint() (protocol.ECN, bool) {
	if !c.t.ecn || c.config.DisableECN {
		return protocol.ECNNotECT, false
	}
	switch c.ecn.state {
	case ecnTesting:
		return protocol.ECNECT0, true
	case ecnCapable:
		return protocol.ECNECT0, false
	}
	return protocol.ECNNotECT, false
}

// onECNMarked counts a datagram marked during testing; the testing period
// ends after ecnTestingPackets of them.
func (c *Conn) onECNMarked() {
	c.ecn.marked++
	if c.ecn.state == ecnTesting && c.ecn.marked >= ecnTestingPackets {
		c.ecn.state = ecnUnknown
	}
}

// onPacketLost counts marked testing packets that were lost: when all
// of them are, the path drops marked packets (RFC 9000 section 13.4.2).
func (e *ecnTracker) onPacketLost(p *sentPacket) {
	if !p.ecnTest || (e.state != ecnTesting && e.state != ecnUnknown) {
		return
	}
	e.lostTest++
	if e.state == ecnUnknown && e.lostTest >= e.sentTest {
		e.state = ecnFailed
	}
}

// onAck validates the ECN counts of an ACK frame that raised the largest
// acknowledged packet of space, newlyMarked being the marked packets it
// newly acknowledges, and tells rec of new CE marks. largestSent is when
// the largest newly acknowledged packet was sent.
func (e *ecnTracker) onAck(space int, f *wire.Frame, newlyMarked int, largestSent, now time.Time, rec *recovery.Recovery) {
	if e.state == ecnFailed || (newlyMarked == 0 && f.Type != wire.FrameTypeAckECN) {
		return
	}
	if f.Type != wire.FrameTypeAckECN {
		e.state = ecnFailed // marked packets acknowledged without counts: marks bleached
		return
	}
	if f.ECT0 < e.ect0[space] || f.ECT1 < e.ect1[space] || f.ECNCE < e.ce[space] {
		e.state = ecnFailed // counts never decrease
		return
	}
	d0, d1, dce := f.ECT0-e.ect0[space], f.ECT1-e.ect1[space], f.ECNCE-e.ce[space]
	e.ect0[space], e.ect1[space], e.ce[space] = f.ECT0, f.ECT1, f.ECNCE
	if d1 > 0 || d0+dce < uint64(newlyMarked) {
		// We never send ECT(1); and every marked packet acknowledged must
		// be counted as ECT(0) or CE (RFC 9000 section 13.4.2.1).
		e.state = ecnFailed
		return
	}
	if newlyMarked > 0 && e.state != ecnCapable {
		e.state = ecnCapable
	}
	if dce > 0 && !largestSent.IsZero() {
		e.ceEvents++
		rec.OnECNCongestion(now, largestSent)
	}
}
