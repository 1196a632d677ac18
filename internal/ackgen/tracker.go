package ackgen

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// Errors returned by Tracker.Received. Both mean the packet must not be
// processed; neither is a connection error.
var (
	ErrDuplicate          = errors.New("ackgen: duplicate packet number")
	ErrPacketNumberTooBig = errors.New("ackgen: packet number above 2^62-1")
)

// Tracker records the packets received in one packet number space and
// decides when to acknowledge them. Create it with NewTracker or Init.
// It is not safe for concurrent use.
type Tracker struct {
	space protocol.PacketNumberSpace
	cfg   Config
	set   rangeSet

	haveLargest bool
	largest     uint64
	largestTime time.Time // receive time of largest, for the ACK Delay field

	// The out-of-order rules of RFC 9000 13.2.1 compare against the largest
	// ack-eliciting packet, not the largest packet.
	haveLargestEliciting bool
	largestEliciting     uint64

	unackedEliciting int       // ack-eliciting packets since our last ACK
	ackNow           bool      // an ACK is due without delay
	alarm            time.Time // delayed-ACK deadline; zero when none

	ect0, ect1, ce uint64
}

// Ack is the content of an ACK frame (RFC 9000 section 19.3).
type Ack struct {
	// Ranges are in descending order; Ranges[0].Largest is the Largest
	// Acknowledged field. A caller short of packet space may cut the slice:
	// the ranges dropped from the end are the oldest, as 13.2.3 asks.
	Ranges []wire.AckRange
	// Delay is the time since the largest acknowledged packet arrived; see
	// EncodeAckDelay for the wire value.
	Delay time.Duration
	// HasECN says whether ECN counts should be sent (frame type 0x03).
	HasECN         bool
	ECT0, ECT1, CE uint64
}

// Init (re)initializes t, so a Tracker can be embedded in a larger struct.
func (t *Tracker) Init(space protocol.PacketNumberSpace, cfg Config) {
	*t = Tracker{space: space, cfg: cfg.withDefaults()}
	t.set.init(t.cfg.MaxRanges)
}

// Space returns the packet number space t was created for.
func (t *Tracker) Space() protocol.PacketNumberSpace { return t.space }

// IsDuplicate reports whether pn was already received, or is so old that its
// state was forgotten; such a packet must be dropped before processing.
func (t *Tracker) IsDuplicate(pn uint64) bool {
	if t.haveLargest && pn > t.largest {
		return false
	}
	return t.set.contains(pn)
}

// LargestReceived returns the largest packet number received so far.
func (t *Tracker) LargestReceived() (pn uint64, ok bool) {
	return t.largest, t.haveLargest
}

// Received records a processed packet. ackEliciting says whether it carried a
// frame other than ACK, PADDING or CONNECTION_CLOSE; ecn is the packet's IP
// ECN mark; now is its arrival time. A duplicate is reported as ErrDuplicate
// and changes nothing.
func (t *Tracker) Received(pn uint64, ackEliciting bool, ecn protocol.ECN, now time.Time) error {
	if pn > MaxPacketNumber {
		return ErrPacketNumberTooBig
	}
	if t.IsDuplicate(pn) {
		return ErrDuplicate
	}
	floor := t.set.floor
	idx := t.set.add(pn)
	if !t.haveLargest || pn > t.largest {
		t.haveLargest = true
		t.largest = pn
		t.largestTime = now
	}
	switch ecn {
	case protocol.ECNECT0:
		t.ect0++
	case protocol.ECNECT1:
		t.ect1++
	case protocol.ECNCE:
		t.ce++
	}
	if !ackEliciting {
		// RFC 9000 13.2.1: a non-ack-eliciting packet alone never causes an
		// ACK, or two endpoints could acknowledge each other forever.
		return nil
	}
	outOfOrder := t.outOfOrder(pn, idx, floor)
	if !t.haveLargestEliciting || pn > t.largestEliciting {
		t.haveLargestEliciting = true
		t.largestEliciting = pn
	}
	t.unackedEliciting++
	switch {
	case t.space != protocol.SpaceAppData:
		// Initial and Handshake packets are acknowledged at once (13.2.1).
		t.ackNow = true
	case outOfOrder || ecn == protocol.ECNCE:
		// Quick feedback on reordering and congestion helps the sender's
		// loss detection and congestion response.
		t.ackNow = true
	case t.unackedEliciting >= t.cfg.AckElicitingThreshold:
		t.ackNow = true
	case t.alarm.IsZero():
		t.alarm = now.Add(t.cfg.MaxAckDelay)
	}
	return nil
}

// outOfOrder applies RFC 9000 13.2.1: pn is below an ack-eliciting packet
// already received (it may fill a gap), or above the largest one with
// packets missing in between. idx is where pn now lives in the range set.
func (t *Tracker) outOfOrder(pn uint64, idx int, floor uint64) bool {
	if t.haveLargestEliciting && pn < t.largestEliciting {
		return true
	}
	if idx < 0 {
		return false
	}
	base := floor // packets below the floor are no longer known: not a gap
	if t.haveLargestEliciting && t.largestEliciting+1 > base {
		base = t.largestEliciting + 1
	}
	return t.set.r[idx].Smallest > base
}

// AckNow reports whether an ACK frame should be sent without delay.
func (t *Tracker) AckNow() bool { return t.ackNow }

// AlarmTime returns when a delayed ACK falls due, or the zero time when
// none is pending. When AckNow is true the alarm is irrelevant.
func (t *Tracker) AlarmTime() time.Time { return t.alarm }

// ShouldSendAck reports whether an ACK is due at now: either at once, or
// because the max_ack_delay alarm has expired.
func (t *Tracker) ShouldSendAck(now time.Time) bool {
	return t.ackNow || (!t.alarm.IsZero() && !now.Before(t.alarm))
}

// HasRanges reports whether there is anything to acknowledge. A connection
// may bundle an ACK into any packet it sends while this holds.
func (t *Tracker) HasRanges() bool { return len(t.set.r) > 0 }

// BuildAck fills an ACK frame's content. The ranges are appended to dst[:0],
// so a dst with capacity for Config.MaxRanges ranges means no allocation.
// It returns false when there is nothing to acknowledge. Building does not
// change t: call OnAckSent once the frame is actually sent.
func (t *Tracker) BuildAck(dst []wire.AckRange, now time.Time) (Ack, bool) {
	if len(t.set.r) == 0 {
		return Ack{}, false
	}
	delay := now.Sub(t.largestTime)
	if delay < 0 {
		delay = 0
	}
	return Ack{
		Ranges: append(dst[:0], t.set.r...),
		Delay:  delay,
		HasECN: t.ect0+t.ect1+t.ce > 0,
		ECT0:   t.ect0,
		ECT1:   t.ect1,
		CE:     t.ce,
	}, true
}

// OnAckSent tells t that an ACK frame built from its current state was sent,
// which satisfies every pending reason to acknowledge.
func (t *Tracker) OnAckSent() {
	t.unackedEliciting = 0
	t.ackNow = false
	t.alarm = time.Time{}
}

// OnAckAcknowledged is called when the peer acknowledged a packet of ours
// that carried an ACK frame whose Largest Acknowledged was largest. The peer
// then knows about every packet up to largest, so those need not be
// acknowledged again (RFC 9000 13.2.4); they are forgotten and from now on
// count as duplicates.
func (t *Tracker) OnAckAcknowledged(largest uint64) {
	if !t.haveLargest {
		return
	}
	if largest > t.largest {
		// We never acknowledged beyond what we received: ignore the excess.
		largest = t.largest
	}
	t.set.forgetUpTo(largest)
}

// EncodeAckDelay converts d to the ACK Delay field value: microseconds
// scaled down by 2^exponent, where exponent is our ack_delay_exponent
// transport parameter (RFC 9000 sections 18.2 and 19.3). Negative delays
// encode as 0; exponents above 20 are invalid and clamp to 20.
func EncodeAckDelay(d time.Duration, exponent uint8) uint64 {
	if d <= 0 {
		return 0
	}
	if exponent > 20 {
		exponent = 20
	}
	return uint64(d/time.Microsecond) >> exponent
}
