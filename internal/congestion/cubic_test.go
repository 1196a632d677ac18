package congestion

import (
	"math"
	"testing"
	"time"
)

// RFC 9438 constants, spelled out so that the tests do not trust the
// implementation's own.
const (
	rfcBeta  = 0.7
	rfcC     = 0.4
	rfcAlpha = 3 * (1 - rfcBeta) / (1 + rfcBeta)
)

type fixedRTT time.Duration

func (f fixedRTT) SmoothedRTT() time.Duration { return time.Duration(f) }
func (f fixedRTT) MinRTT() time.Duration      { return time.Duration(f) }
func (f fixedRTT) LatestRTT() time.Duration   { return time.Duration(f) }

// growCubicTo takes a fresh CUBIC controller through slow start to about
// segments datagrams and then a loss, returning the loss time.
func growCubicTo(c *Cubic, segments int) time.Time {
	for c.CongestionWindow() < segments*1200 {
		c.OnPacketAcked(t0, t0, 1200, c.CongestionWindow())
	}
	loss := t0.Add(ms(1))
	c.OnPacketsLost(loss, t0, 1200)
	return loss
}

// ackRounds acknowledges exactly one window of bytes per round trip,
// spreading the ACKs over the round, and calls check after each round.
func ackRounds(c *Cubic, start time.Time, rtt time.Duration, rounds int, check func(round int, now time.Time)) {
	now := start
	for round := 1; round <= rounds; round++ {
		window := c.CongestionWindow()
		n := (window + 1199) / 1200
		step := rtt / time.Duration(n)
		for i := range n {
			bytes := min(1200, window-1200*i)
			at := now.Add(step * time.Duration(i+1))
			c.OnPacketAcked(at, at.Add(-rtt), bytes, c.CongestionWindow())
		}
		now = now.Add(rtt)
		check(round, now)
	}
}

func TestCubicMultiplicativeDecrease(t *testing.T) {
	c := newTestCubic(fixedRTT(ms(100)))
	growCubicTo(c, 100)
	if got, want := c.CongestionWindow(), 84000; got != want {
		t.Fatalf("cwnd after loss %d, want %d (0.7 * 120000)", got, want)
	}
	if c.InSlowStart() || !c.InRecovery() {
		t.Fatal("must be in congestion avoidance and recovery")
	}
	if c.wMax != 120000 {
		t.Fatalf("W_max %v, want 120000", c.wMax)
	}
}

func TestCubicFastConvergence(t *testing.T) {
	c := newTestCubic(fixedRTT(ms(100)))
	loss := growCubicTo(c, 100) // W_max 120000, cwnd 84000
	// A second loss, in a new recovery period, below W_max.
	c.OnPacketsLost(loss.Add(ms(500)), loss.Add(ms(1)), 1200)
	if want := 84000 * (1 + rfcBeta) / 2; math.Abs(c.wMax-want) > 1e-6 {
		t.Fatalf("W_max %v, want %v", c.wMax, want)
	}
	if want := 84000 * rfcBeta; math.Abs(float64(c.CongestionWindow())-want) > 1 {
		t.Fatalf("cwnd %d, want %v", c.CongestionWindow(), want)
	}
}

// TestCubicCurve checks the window against W_cubic(t) = C(t-K)^3 + W_max
// through the concave and convex regions, with a long RTT so that the
// Reno-friendly estimate stays below the curve.
func TestCubicCurve(t *testing.T) {
	const rtt = 200 * time.Millisecond
	c := newTestCubic(fixedRTT(rtt))
	loss := growCubicTo(c, 100)
	wMaxSeg := 100.0
	k := math.Cbrt(wMaxSeg * (1 - rfcBeta) / rfcC) // cbrt(75) = 4.217 s
	wCubic := func(t float64) float64 { return rfcC*math.Pow(t-k, 3) + wMaxSeg }

	// ACKs in the first round are for packets sent before the loss; the
	// epoch starts with the first ACK after them.
	epoch := loss.Add(rtt)
	var prev, prevGrowth float64
	concaveSlowing, convexSpeeding := 0, 0
	ackRounds(c, loss, rtt, 50, func(round int, now time.Time) {
		tSec := now.Sub(epoch).Seconds()
		got := float64(c.CongestionWindow()) / 1200
		// Aiming each ACK at W_cubic(t+RTT) over a round trip lands the
		// window on the curve at the end of the round.
		if want := wCubic(tSec); math.Abs(got-want) > 0.5 {
			t.Fatalf("round %d t=%.2fs: cwnd %.3f segments, W_cubic(t) = %.3f", round, tSec, got, want)
		}
		growth := got - prev
		if round > 2 {
			if tSec < k-0.5 && growth < prevGrowth {
				concaveSlowing++
			}
			if tSec > k+0.5 && growth > prevGrowth {
				convexSpeeding++
			}
		}
		prev, prevGrowth = got, growth
	})
	if c.wEst >= float64(c.CongestionWindow()) {
		t.Fatal("the Reno-friendly estimate took over; the test does not check the curve")
	}
	if concaveSlowing < 15 || convexSpeeding < 15 {
		t.Fatalf("curve shape: %d slowing rounds before K, %d speeding rounds after", concaveSlowing, convexSpeeding)
	}
}

// TestCubicRenoFriendly uses a short RTT and a small window, where Reno
// would outgrow the cubic curve: the window must follow W_est, growing by
// alpha = 3(1-beta)/(1+beta) segments per RTT until it reaches the window
// before the loss and by one segment per RTT afterwards.
func TestCubicRenoFriendly(t *testing.T) {
	const rtt = 10 * time.Millisecond
	c := newTestCubic(fixedRTT(rtt))
	loss := growCubicTo(c, 20) // W_max = 24000 (20 segments), cwnd 14 segments
	want := 14.0
	ackRounds(c, loss, rtt, 60, func(round int, now time.Time) {
		switch {
		case round == 1:
			// Packets sent before the loss: recovery, no growth.
		case want < 20:
			want += rfcAlpha
		default:
			want++
		}
		got := float64(c.CongestionWindow()) / 1200
		if math.Abs(got-want) > 1 {
			t.Fatalf("round %d: cwnd %.2f segments, Reno-friendly estimate %.2f", round, got, want)
		}
		tSec := now.Sub(loss.Add(rtt)).Seconds()
		if cubic := c.wCubic(tSec) / 1200; round > 20 && got <= cubic {
			t.Fatalf("round %d: cwnd %.2f not above W_cubic %.2f", round, got, cubic)
		}
	})
}

func TestCubicAppLimited(t *testing.T) {
	const rtt = 100 * time.Millisecond
	c := newTestCubic(fixedRTT(rtt))
	loss := growCubicTo(c, 100)
	ackRounds(c, loss, rtt, 5, func(int, time.Time) {})
	before := c.CongestionWindow()
	epoch := c.epochStart
	// Ten seconds of ACKs while sending far below the window.
	now := loss.Add(5 * rtt)
	for range 100 {
		now = now.Add(rtt)
		c.OnPacketAcked(now, now.Add(-rtt), 1200, 1200)
	}
	if c.CongestionWindow() != before {
		t.Fatalf("window grew while application limited: %d -> %d", before, c.CongestionWindow())
	}
	if got := c.epochStart.Sub(epoch); got < 100*rtt || got > 100*rtt+time.Microsecond {
		t.Fatalf("epoch moved by %v, want the application-limited 10s", got)
	}
}

func TestCubicPersistentCongestion(t *testing.T) {
	c := newTestCubic(fixedRTT(ms(100)))
	loss := growCubicTo(c, 50)
	c.OnPersistentCongestion(loss)
	if c.CongestionWindow() != 2400 || c.InRecovery() {
		t.Fatalf("cwnd %d recovery %v", c.CongestionWindow(), c.InRecovery())
	}
	// Back to slow start below ssthresh.
	if !c.InSlowStart() {
		t.Fatal("not in slow start after collapse")
	}
}
