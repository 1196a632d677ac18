package congestion

import (
	"math"
	"time"
)

// CUBIC constants (RFC 9438 section 5).
const (
	cubicBeta = 0.7 // multiplicative decrease factor
	cubicC    = 0.4 // scaling constant, in segments per second cubed
	// cubicAlpha is the Reno-friendly additive increase, 3(1-beta)/(1+beta)
	// segments per round trip (RFC 9438 section 4.3), which gives the same
	// average rate as Reno's AIMD(1, 0.5).
	cubicAlpha = 3 * (1 - cubicBeta) / (1 + cubicBeta)
)

// Cubic is the CUBIC congestion controller of RFC 9438 with fast
// convergence, the Reno-friendly region, byte counting, and HyStart++ in
// its first slow start. Windows are kept
// as float64 bytes internally so that small per-ACK increments accumulate.
type Cubic struct {
	rtt             RTTSource
	hystart         hystart
	maxDatagramSize int
	cwnd            float64
	ssthresh        float64
	recovery        recoveryPeriod

	// Congestion avoidance epoch; epochStart is zero until the first ACK
	// in congestion avoidance after a reduction or slow start.
	epochStart time.Time
	lastAck    time.Time
	wMax       float64 // window before the last reduction, bytes
	k          float64 // seconds until W_cubic reaches wMax
	wEst       float64 // Reno-friendly estimate, bytes
	cwndPrior  float64 // window when ssthresh was last set, bytes

	// undo and saved revert the latest loss reduction should every loss
	// behind it prove spurious.
	undo  lossUndo
	saved cubicState
}

// cubicState is what a window reduction changes.
type cubicState struct {
	cwnd, ssthresh, wMax, k, wEst, cwndPrior float64
	epochStart                               time.Time
}

var _ Controller = (*Cubic)(nil)

// NewCubic returns a CUBIC controller in slow start. rtt supplies the
// smoothed RTT used to look one round trip ahead on the curve.
func NewCubic(rtt RTTSource, maxDatagramSize int) *Cubic {
	maxDatagramSize = max(maxDatagramSize, DefaultMaxDatagramSize)
	return &Cubic{
		rtt:             rtt,
		hystart:         newHystart(),
		maxDatagramSize: maxDatagramSize,
		cwnd:            float64(InitialWindow(maxDatagramSize)),
		ssthresh:        math.Inf(1),
	}
}

// OnPacketSent implements Controller; CUBIC needs nothing at send time.
func (c *Cubic) OnPacketSent(time.Time, int, int) {}

// OnPacketAcked implements Controller.
func (c *Cubic) OnPacketAcked(now, sentTime time.Time, bytes, priorInFlight int) {
	c.recovery.onAck(sentTime)
	if c.recovery.covers(sentTime) {
		return
	}
	divisor, exit := 1, false
	if math.IsInf(c.ssthresh, 1) {
		divisor, exit = c.hystart.onAck(now, sentTime, c.rtt.LatestRTT())
	}
	c.grow(now, bytes, priorInFlight, divisor)
	if exit {
		// Congestion avoidance starts with the next ACK, the curve's
		// plateau at the window HyStart++ stopped at.
		c.ssthresh = c.cwnd
	}
}

// grow applies an ACK of bytes to the window; divisor slows slow start
// down in HyStart++'s Conservative Slow Start.
func (c *Cubic) grow(now time.Time, bytes, priorInFlight, divisor int) {
	if !cwndLimited(int(c.cwnd), priorInFlight, c.maxDatagramSize, c.InSlowStart()) {
		// RFC 9438 section 5.8: the time the sender was application
		// limited must not count in t, so the epoch slides forward.
		if !c.epochStart.IsZero() && now.After(c.lastAck) {
			c.epochStart = c.epochStart.Add(now.Sub(c.lastAck))
		}
		c.lastAck = now
		return
	}
	c.lastAck = now
	if c.InSlowStart() {
		c.cwnd += float64(bytes) / float64(divisor)
		return
	}
	c.congestionAvoidance(now, float64(bytes))
}

func (c *Cubic) congestionAvoidance(now time.Time, acked float64) {
	mss := float64(c.maxDatagramSize)
	if c.epochStart.IsZero() {
		c.startEpoch(now)
	}
	t := now.Sub(c.epochStart).Seconds()
	rtt := c.rtt.SmoothedRTT().Seconds()

	// Reno-friendly estimate (RFC 9438 section 4.3): alpha segments per
	// window acked, 1 once the estimate regained the pre-loss window.
	alpha := cubicAlpha
	if c.wEst >= c.cwndPrior {
		alpha = 1
	}
	c.wEst += alpha * mss * acked / c.cwnd

	if c.wCubic(t) < c.wEst {
		c.cwnd = max(c.cwnd, c.wEst)
		return
	}
	// Concave and convex regions (RFC 9438 sections 4.4, 4.5): aim for
	// the curve one RTT ahead, at most 1.5 times the current window.
	target := min(max(c.wCubic(t+rtt), c.cwnd), 1.5*c.cwnd)
	c.cwnd += (target - c.cwnd) * acked / c.cwnd
}

// startEpoch begins congestion avoidance. Without a previous reduction (the
// sender left slow start on its own) the curve starts at its plateau.
func (c *Cubic) startEpoch(now time.Time) {
	c.epochStart = now
	c.wEst = c.cwnd
	if c.cwndPrior == 0 {
		c.cwndPrior = c.cwnd
	}
	if c.wMax <= c.cwnd {
		c.wMax = c.cwnd
		c.k = 0
		return
	}
	c.k = math.Cbrt((c.wMax - c.cwnd) / float64(c.maxDatagramSize) / cubicC)
}

// wCubic evaluates W_cubic(t) = C*(t-K)^3 + W_max (RFC 9438 equation 1),
// converted to bytes.
func (c *Cubic) wCubic(t float64) float64 {
	d := t - c.k
	return cubicC*d*d*d*float64(c.maxDatagramSize) + c.wMax
}

// OnPacketsLost implements Controller.
func (c *Cubic) OnPacketsLost(now, largestSentTime time.Time, lostBytes int) {
	if lostBytes <= 0 {
		return
	}
	if c.recovery.covers(largestSentTime) {
		c.undo.addLoss(largestSentTime, lostBytes)
		return
	}
	c.saved = cubicState{c.cwnd, c.ssthresh, c.wMax, c.k, c.wEst, c.cwndPrior, c.epochStart}
	prior := c.recovery
	c.reduce(now)
	c.undo.begin(prior, now, lostBytes)
}

// OnCongestionEvent implements Controller: multiply the window by beta
// once per recovery period. Whether it reduces or not, the reduction in
// force can no longer be undone.
func (c *Cubic) OnCongestionEvent(now, sentTime time.Time) {
	c.undo.disarm()
	if !c.recovery.covers(sentTime) {
		c.reduce(now)
	}
}

// reduce multiplies the window by beta, remembering W_max with fast
// convergence (RFC 9438 sections 4.6 and 4.7).
func (c *Cubic) reduce(now time.Time) {
	c.recovery.enter(now)
	if c.cwnd < c.wMax {
		// Fast convergence: a flow whose plateau keeps falling releases
		// bandwidth to newer flows.
		c.wMax = c.cwnd * (1 + cubicBeta) / 2
	} else {
		c.wMax = c.cwnd
	}
	c.cwndPrior = c.cwnd
	c.ssthresh = max(c.cwnd*cubicBeta, float64(MinimumWindow(c.maxDatagramSize)))
	c.cwnd = c.ssthresh
	c.epochStart = time.Time{}
}

// OnSpuriousLoss implements Controller. The window, threshold, curve and
// recovery period go back to what they were before the reduction, unless
// the window has meanwhile grown past that. The window did not grow while
// the reduction stood, so that time does not count on the restored curve:
// its epoch slides forward, as for an application-limited spell.
func (c *Cubic) OnSpuriousLoss(now, sentTime time.Time, bytes int) bool {
	if !c.undo.spurious(c.recovery, sentTime, bytes) {
		return false
	}
	if c.cwnd > c.saved.cwnd {
		return false
	}
	st := c.saved
	c.cwnd, c.ssthresh, c.wMax, c.k, c.wEst, c.cwndPrior = st.cwnd, st.ssthresh, st.wMax, st.k, st.wEst, st.cwndPrior
	c.cwnd = max(c.cwnd, float64(MinimumWindow(c.maxDatagramSize))) // in case the datagram size grew
	c.epochStart = st.epochStart
	if !c.epochStart.IsZero() && now.After(c.undo.reducedAt) {
		c.epochStart = c.epochStart.Add(now.Sub(c.undo.reducedAt))
	}
	c.recovery = c.undo.prior
	return true
}

// OnPersistentCongestion implements Controller.
func (c *Cubic) OnPersistentCongestion(time.Time) {
	c.undo.disarm()
	c.cwnd = float64(MinimumWindow(c.maxDatagramSize))
	c.recovery.reset()
	c.epochStart = time.Time{}
}

// CanSend implements Controller.
func (c *Cubic) CanSend(bytesInFlight int) bool { return bytesInFlight < int(c.cwnd) }

// CongestionWindow implements Controller.
func (c *Cubic) CongestionWindow() int { return int(c.cwnd) }

// InSlowStart implements Controller.
func (c *Cubic) InSlowStart() bool { return c.cwnd < c.ssthresh }

// InRecovery implements Controller.
func (c *Cubic) InRecovery() bool { return c.recovery.active }

// SetMaxDatagramSize implements Controller, like NewReno's.
func (c *Cubic) SetMaxDatagramSize(size int) {
	if size < DefaultMaxDatagramSize || size == c.maxDatagramSize {
		return
	}
	if int(c.cwnd) == InitialWindow(c.maxDatagramSize) {
		c.cwnd = float64(InitialWindow(size))
	}
	c.maxDatagramSize = size
	c.cwnd = max(c.cwnd, float64(MinimumWindow(size)))
	if !c.epochStart.IsZero() {
		// K is measured in segments of the old size.
		c.epochStart = time.Time{}
	}
	c.saved.epochStart = time.Time{} // an undo recomputes K too
}
