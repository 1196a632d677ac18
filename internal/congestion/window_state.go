package congestion

import "time"

// cwndLimitSlackPackets is how close to the window the bytes in flight must
// be for the sender to count as window-limited. A sender that paces or
// sends in bursts rarely fills the window to the byte.
const cwndLimitSlackPackets = 3

// cwndLimited reports whether a sender with priorInFlight bytes outstanding
// was limited by the window rather than by the application or flow control
// (RFC 9002 section 7.8). In slow start, half a window in flight counts, as
// the window doubles each round trip.
func cwndLimited(cwnd, priorInFlight, maxDatagramSize int, slowStart bool) bool {
	if priorInFlight >= cwnd {
		return true
	}
	if slowStart && priorInFlight > cwnd/2 {
		return true
	}
	return cwnd-priorInFlight <= cwndLimitSlackPackets*maxDatagramSize
}

// recoveryPeriod tracks the recovery period shared by both controllers
// (RFC 9002 section 7.3.2).
type recoveryPeriod struct {
	start  time.Time // zero: no recovery period has started
	active bool
}

// covers reports whether a packet sent at sentTime was sent before the
// current recovery period started, so signals about it are ignored.
func (r *recoveryPeriod) covers(sentTime time.Time) bool {
	return !r.start.IsZero() && !sentTime.After(r.start)
}

// onAck ends the recovery period once a packet sent after it is acked.
func (r *recoveryPeriod) onAck(sentTime time.Time) {
	if r.active && !r.covers(sentTime) {
		r.active = false
	}
}

func (r *recoveryPeriod) enter(now time.Time) {
	r.start = now
	r.active = true
}

func (r *recoveryPeriod) reset() { *r = recoveryPeriod{} }
