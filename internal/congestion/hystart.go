package congestion

import (
	"math"
	"time"
)

// HyStart++ constants (RFC 9406 section 4.3).
const (
	hystartMinRTTThresh = 4 * time.Millisecond
	hystartMaxRTTThresh = 16 * time.Millisecond
	// hystartMinRTTDivisor sets the delay increase that ends slow start as
	// a fraction of the previous round's minimum RTT.
	hystartMinRTTDivisor = 8
	// hystartRTTSamples is how many RTT samples a round needs before its
	// minimum is trusted.
	hystartRTTSamples = 8
	// hystartCSSGrowthDivisor slows window growth in Conservative Slow
	// Start.
	hystartCSSGrowthDivisor = 4
	// hystartCSSRounds is how many rounds Conservative Slow Start lasts
	// before the sender moves to congestion avoidance.
	hystartCSSRounds = 5
)

// noRTT stands for the RFC's "infinity": no sample yet.
const noRTT = time.Duration(math.MaxInt64)

// hystart is HyStart++ (RFC 9406): it ends the first slow start when the
// round-trip time grows, a sign that a queue is building, before the queue
// overflows. A delay increase moves the sender to Conservative Slow Start
// (CSS), which grows the window at a quarter of the rate; an RTT back
// below the level that triggered it proves the increase spurious and
// resumes slow start, while CSS_ROUNDS rounds of CSS end slow start for
// good. The controller consults it only while ssthresh is still
// unbounded: later slow starts stop at the ssthresh a loss set (RFC 9406
// section 4.3).
//
// The pacer spreads every window over the round trip, so the per-ACK
// growth cap L of RFC 9406 is infinite here and not modelled.
//
// A round is counted by send time: it began at the ACK that ended the
// previous one and ends when a packet sent after that is acknowledged,
// which is the RFC's windowEnd = SND.NXT without packet numbers.
type hystart struct {
	roundStart time.Time // zero: no round yet
	// One ACK acknowledges several packets at the same instant but gives a
	// single RTT sample; lastSample tells a new ACK from the next packet of
	// the same one.
	lastSample         time.Time
	samples            int
	currentRoundMinRTT time.Duration
	lastRoundMinRTT    time.Duration
	// cssBaselineMinRTT is the minimum RTT that moved the sender to CSS;
	// noRTT while in standard slow start.
	cssBaselineMinRTT time.Duration
	cssRounds         int // rounds completed in CSS
}

func newHystart() hystart {
	return hystart{currentRoundMinRTT: noRTT, lastRoundMinRTT: noRTT, cssBaselineMinRTT: noRTT}
}

// inCSS reports whether the sender is in Conservative Slow Start.
func (h *hystart) inCSS() bool { return h.cssBaselineMinRTT != noRTT }

// onAck takes the acknowledgment, at now, of a packet sent at sentTime,
// with rtt the connection's latest RTT sample (0 before any). It returns
// the divisor for the slow start increase the ACK earns (1 in standard
// slow start, CSS_GROWTH_DIVISOR in CSS) and whether slow start is over.
func (h *hystart) onAck(now, sentTime time.Time, rtt time.Duration) (growthDivisor int, exit bool) {
	if h.roundStart.IsZero() || sentTime.After(h.roundStart) {
		if !h.roundStart.IsZero() && h.inCSS() {
			h.cssRounds++
			if h.cssRounds >= hystartCSSRounds {
				return hystartCSSGrowthDivisor, true
			}
		}
		h.roundStart = now
		h.lastRoundMinRTT = h.currentRoundMinRTT
		h.currentRoundMinRTT = noRTT
		h.samples = 0
	}
	if rtt > 0 && !now.Equal(h.lastSample) {
		h.lastSample = now
		h.currentRoundMinRTT = min(h.currentRoundMinRTT, rtt)
		h.samples++
		h.checkDelay()
	}
	if h.inCSS() {
		return hystartCSSGrowthDivisor, false
	}
	return 1, false
}

// checkDelay enters CSS on a delay increase over the previous round, and
// leaves it when the RTT falls back below the level that caused the entry.
func (h *hystart) checkDelay() {
	if h.samples < hystartRTTSamples || h.currentRoundMinRTT == noRTT {
		return
	}
	if h.inCSS() {
		if h.currentRoundMinRTT < h.cssBaselineMinRTT {
			h.cssBaselineMinRTT = noRTT // spurious: back to slow start
			h.cssRounds = 0
		}
		return
	}
	if h.lastRoundMinRTT == noRTT {
		return
	}
	thresh := min(max(h.lastRoundMinRTT/hystartMinRTTDivisor, hystartMinRTTThresh), hystartMaxRTTThresh)
	if h.currentRoundMinRTT >= h.lastRoundMinRTT+thresh {
		h.cssBaselineMinRTT = h.currentRoundMinRTT
		h.cssRounds = 0
	}
}
