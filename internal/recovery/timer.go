package recovery

import (
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

// maxPTOBackoff caps the PTO exponent so the timeout cannot overflow; the
// idle timeout closes a connection long before it is reached.
const maxPTOBackoff = 16

// maxPTOPeriod caps the PTO period, backoff and max_ack_delay included, as
// quic-go does: a connection with a long idle timeout still probes at
// least once a minute, so it notices a path that came back.
const maxPTOPeriod = time.Minute

// maxClientHandshakePTOPeriod caps a client's PTO period, backoff
// included, until the handshake is confirmed. A server gives up on a
// handshake it has not heard from for its handshake idle timeout (quic-go:
// 5 s), and the client's next probe, which may still carry the ClientHello
// to the original destination connection ID, then starts a second
// handshake. Probes at most 1 s apart keep such a server going even when
// three in a row are lost.
const maxClientHandshakePTOPeriod = time.Second

// probesPerIdleTimeout is how many probes at least fit in the idle timeout
// once the PTO has backed off: the peer counts its idle timeout from the
// last packet of ours it received, so a sender whose next probe came after
// it would lose a connection that one delivered probe saves. Four leave
// room for three lost ones in a row.
const probesPerIdleTimeout = 4

// TimeoutKind says what a loss detection timeout asks of the connection.
type TimeoutKind uint8

const (
	// TimeoutNone: the timer had not expired; nothing to do.
	TimeoutNone TimeoutKind = iota
	// TimeoutLoss: packets were declared lost by the time threshold; they
	// are in Events.Lost and their frames need retransmitting.
	TimeoutLoss
	// TimeoutProbe: the PTO expired; send Probes ack-eliciting packets in
	// Space, even beyond the congestion window (RFC 9002 section 6.2.4).
	TimeoutProbe
)

// TimeoutAction is the result of OnLossDetectionTimeout.
type TimeoutAction struct {
	Kind  TimeoutKind
	Space protocol.PacketNumberSpace
	// Probes is 1 for a client's anti-deadlock probe (a padded Initial or
	// a Handshake packet) and 2 for a regular PTO (one is enough when
	// there is little to send).
	Probes int
}

// LossDetectionTimeout returns when OnLossDetectionTimeout must be called,
// or the zero time when no timer is armed.
func (r *Recovery) LossDetectionTimeout() time.Time { return r.timer }

// OnLossDetectionTimeout handles the loss detection timer (RFC 9002
// appendix A.9): it declares time threshold losses, or backs off the PTO
// and asks for probes. Calling it before the timer expires does nothing.
func (r *Recovery) OnLossDetectionTimeout(now time.Time, ev *Events) TimeoutAction {
	if r.timer.IsZero() || now.Before(r.timer) {
		return TimeoutAction{}
	}
	if t, space := r.lossTimeAndSpace(); !t.IsZero() {
		if ev == nil {
			r.scratch.Reset()
			ev = &r.scratch
		}
		r.detectAndReportLosses(space, now, ev)
		r.spaces[space].sent.popResolved()
		r.setTimer(now)
		return TimeoutAction{Kind: TimeoutLoss, Space: space}
	}
	action := TimeoutAction{Kind: TimeoutProbe, Probes: 2}
	if !r.ackElicitingInFlight() {
		// A client with nothing in flight whose address the server may
		// not have validated: the server could be blocked by its
		// amplification limit, so only the client can break the deadlock.
		action.Probes = 1
		action.Space = r.antiDeadlockSpace()
	} else {
		var t time.Time
		if t, action.Space = r.ptoTimeAndSpace(now); t.IsZero() {
			r.setTimer(now)
			return TimeoutAction{}
		}
	}
	r.ptoCount++
	r.setTimer(now)
	return action
}

// setTimer is SetLossDetectionTimer of RFC 9002 appendix A.8.
func (r *Recovery) setTimer(now time.Time) {
	if t, _ := r.lossTimeAndSpace(); !t.IsZero() {
		r.timer = t
		return
	}
	if r.isServer && r.amplificationLimited {
		r.timer = time.Time{}
		return
	}
	if !r.ackElicitingInFlight() && r.peerCompletedAddressValidation() {
		r.timer = time.Time{}
		return
	}
	r.timer, _ = r.ptoTimeAndSpace(now)
}

// lossTimeAndSpace returns the earliest time threshold loss time among the
// spaces (zero when none is set).
func (r *Recovery) lossTimeAndSpace() (time.Time, protocol.PacketNumberSpace) {
	var earliest time.Time
	space := protocol.SpaceInitial
	for sp := range protocol.NumSpaces {
		t := r.spaces[sp].lossTime
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest, space = t, sp
		}
	}
	return earliest, space
}

// ptoDuration returns the PTO period with exponential backoff, with
// max_ack_delay (also backed off) when withAckDelay, at most maxPTOPeriod.
// Backoff stops at a quarter of the idle timeout and, for a client before
// the handshake is confirmed, at maxClientHandshakePTOPeriod; neither cap
// shortens the period below the unbacked-off one.
func (r *Recovery) ptoDuration(withAckDelay bool) time.Duration {
	base := r.rtt.PTOBase()
	if withAckDelay {
		base += r.rtt.MaxAckDelay()
	}
	d := min(base<<min(r.ptoCount, maxPTOBackoff), maxPTOPeriod)
	if r.idleTimeout > 0 {
		d = min(d, max(r.idleTimeout/probesPerIdleTimeout, base))
	}
	if !r.isServer && !r.handshakeConfirmed {
		d = min(d, max(maxClientHandshakePTOPeriod, base))
	}
	return d
}

func (r *Recovery) antiDeadlockSpace() protocol.PacketNumberSpace {
	if r.hasHandshakeKeys || r.spaces[protocol.SpaceInitial].discarded {
		return protocol.SpaceHandshake
	}
	return protocol.SpaceInitial
}

// ptoTimeAndSpace is GetPtoTimeAndSpace of RFC 9002 appendix A.8. The
// zero time means no PTO applies: the only packets in flight are
// ApplicationData ones sent before the handshake was confirmed.
func (r *Recovery) ptoTimeAndSpace(now time.Time) (time.Time, protocol.PacketNumberSpace) {
	d := r.ptoDuration(false)
	if !r.ackElicitingInFlight() {
		// Anti-deadlock PTO, counted from now.
		return now.Add(d), r.antiDeadlockSpace()
	}
	var earliest time.Time
	space := protocol.SpaceInitial
	for sp := range protocol.NumSpaces {
		s := &r.spaces[sp]
		if s.ackElicitingInFlight == 0 {
			continue
		}
		if sp == protocol.SpaceAppData {
			if !r.handshakeConfirmed {
				break
			}
			// The peer may delay ACKs of 1-RTT packets by up to
			// max_ack_delay.
			d = r.ptoDuration(true)
		}
		if t := s.lastAckElicitingSent.Add(d); earliest.IsZero() || t.Before(earliest) {
			earliest, space = t, sp
		}
	}
	return earliest, space
}
