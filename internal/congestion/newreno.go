package congestion

import (
	"math"
	"time"
)

// renoLossReduction is kLossReductionFactor (RFC 9002 section 7.3.2),
// expressed as a divisor.
const renoLossReductionDivisor = 2

// NewReno is the congestion controller of RFC 9002 section 7 and appendix B.
type NewReno struct {
	rtt             RTTSource // nil: no HyStart++
	hystart         hystart
	maxDatagramSize int
	cwnd            int
	ssthresh        int
	recovery        recoveryPeriod
	// ackedInAvoidance counts bytes acked in congestion avoidance; each full
	// window of them adds one datagram, which avoids the rounding loss of a
	// per-ACK fraction.
	ackedInAvoidance int

	// undo and saved revert the latest loss reduction should every loss
	// behind it prove spurious.
	undo  lossUndo
	saved renoState
}

// renoState is what a window reduction changes.
type renoState struct {
	cwnd, ssthresh, ackedInAvoidance int
}

var _ Controller = (*NewReno)(nil)

// NewNewReno returns a NewReno controller in slow start with the initial
// window for maxDatagramSize (DefaultMaxDatagramSize when it is smaller).
// rtt supplies the RTT samples HyStart++ ends the first slow start with;
// nil leaves slow start to end at the first loss.
func NewNewReno(rtt RTTSource, maxDatagramSize int) *NewReno {
	maxDatagramSize = max(maxDatagramSize, DefaultMaxDatagramSize)
	return &NewReno{
		rtt:             rtt,
		hystart:         newHystart(),
		maxDatagramSize: maxDatagramSize,
		cwnd:            InitialWindow(maxDatagramSize),
		ssthresh:        math.MaxInt,
	}
}

// OnPacketSent implements Controller; NewReno needs nothing at send time.
func (c *NewReno) OnPacketSent(time.Time, int, int) {}

// OnPacketAcked implements Controller.
func (c *NewReno) OnPacketAcked(now, sentTime time.Time, bytes, priorInFlight int) {
	c.recovery.onAck(sentTime)
	if c.recovery.covers(sentTime) {
		return
	}
	divisor, exit := 1, false
	if c.rtt != nil && c.ssthresh == math.MaxInt {
		divisor, exit = c.hystart.onAck(now, sentTime, c.rtt.LatestRTT())
	}
	limited := cwndLimited(c.cwnd, priorInFlight, c.maxDatagramSize, c.InSlowStart())
	if c.InSlowStart() {
		if limited {
			c.cwnd += bytes / divisor
		}
		if exit {
			c.ssthresh = c.cwnd
		}
		return
	}
	if !limited {
		return
	}
	c.ackedInAvoidance += bytes
	if c.ackedInAvoidance >= c.cwnd {
		c.ackedInAvoidance -= c.cwnd
		c.cwnd += c.maxDatagramSize
	}
}

// OnPacketsLost implements Controller.
func (c *NewReno) OnPacketsLost(now, largestSentTime time.Time, lostBytes int) {
	if lostBytes <= 0 {
		return
	}
	if c.recovery.covers(largestSentTime) {
		c.undo.addLoss(largestSentTime, lostBytes)
		return
	}
	c.saved = renoState{c.cwnd, c.ssthresh, c.ackedInAvoidance}
	prior := c.recovery
	c.reduce(now)
	c.undo.begin(prior, now, lostBytes)
}

// OnCongestionEvent implements Controller: halve the window, at most once
// per recovery period. Whether it reduces or not, the reduction in force
// can no longer be undone.
func (c *NewReno) OnCongestionEvent(now, sentTime time.Time) {
	c.undo.disarm()
	if !c.recovery.covers(sentTime) {
		c.reduce(now)
	}
}

func (c *NewReno) reduce(now time.Time) {
	c.recovery.enter(now)
	c.ssthresh = c.cwnd / renoLossReductionDivisor
	c.cwnd = max(c.ssthresh, MinimumWindow(c.maxDatagramSize))
	c.ackedInAvoidance = 0
}

// OnSpuriousLoss implements Controller. The window, threshold and
// recovery period go back to what they were before the reduction, unless
// the window has meanwhile grown past that.
func (c *NewReno) OnSpuriousLoss(_, sentTime time.Time, bytes int) bool {
	if !c.undo.spurious(c.recovery, sentTime, bytes) {
		return false
	}
	if c.cwnd > c.saved.cwnd {
		return false
	}
	c.cwnd, c.ssthresh, c.ackedInAvoidance = c.saved.cwnd, c.saved.ssthresh, c.saved.ackedInAvoidance
	c.cwnd = max(c.cwnd, MinimumWindow(c.maxDatagramSize)) // in case the datagram size grew
	c.recovery = c.undo.prior
	return true
}

// OnPersistentCongestion implements Controller.
func (c *NewReno) OnPersistentCongestion(time.Time) {
	c.undo.disarm()
	c.cwnd = MinimumWindow(c.maxDatagramSize)
	c.recovery.reset()
	c.ackedInAvoidance = 0
}

// CanSend implements Controller.
func (c *NewReno) CanSend(bytesInFlight int) bool { return bytesInFlight < c.cwnd }

// CongestionWindow implements Controller.
func (c *NewReno) CongestionWindow() int { return c.cwnd }

// SlowStartThreshold returns ssthresh (math.MaxInt before the first loss).
func (c *NewReno) SlowStartThreshold() int { return c.ssthresh }

// InSlowStart implements Controller.
func (c *NewReno) InSlowStart() bool { return c.cwnd < c.ssthresh }

// InRecovery implements Controller.
func (c *NewReno) InRecovery() bool { return c.recovery.active }

// SetMaxDatagramSize implements Controller. A window still at its initial
// value is recomputed for the new size (RFC 9002 section 7.2).
func (c *NewReno) SetMaxDatagramSize(size int) {
	if size < DefaultMaxDatagramSize || size == c.maxDatagramSize {
		return
	}
	if c.cwnd == InitialWindow(c.maxDatagramSize) {
		c.cwnd = InitialWindow(size)
	}
	c.maxDatagramSize = size
	c.cwnd = max(c.cwnd, MinimumWindow(size))
}
