package congestion

import (
	"math"
	"testing"
	"time"
)

// growReno takes a NewReno controller out of its initial window to cwnd
// bytes in slow start.
func growReno(t *testing.T, cwnd int) *NewReno {
	t.Helper()
	c := newTestReno()
	for c.CongestionWindow() < cwnd {
		c.OnPacketAcked(t0, t0, 1200, c.CongestionWindow())
	}
	if c.CongestionWindow() != cwnd {
		t.Fatalf("grew to %d, want %d", c.CongestionWindow(), cwnd)
	}
	return c
}

func TestNewRenoSpuriousLossUndoesReduction(t *testing.T) {
	c := growReno(t, 48000)
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200)
	if c.CongestionWindow() != 24000 || c.SlowStartThreshold() != 24000 {
		t.Fatalf("after loss: cwnd %d ssthresh %d", c.CongestionWindow(), c.SlowStartThreshold())
	}
	// A packet sent after the reduction was never counted toward it.
	if c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(101)), 1200) {
		t.Fatal("a packet sent after the reduction undid it")
	}
	if !c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(50)), 1200) {
		t.Fatal("the only counted loss proved spurious, but no undo")
	}
	if c.CongestionWindow() != 48000 || c.SlowStartThreshold() != math.MaxInt || !c.InSlowStart() || c.InRecovery() {
		t.Fatalf("after undo: cwnd %d ssthresh %d slow start %v recovery %v",
			c.CongestionWindow(), c.SlowStartThreshold(), c.InSlowStart(), c.InRecovery())
	}
	// The undo is spent: a second report changes nothing.
	if c.OnSpuriousLoss(t0.Add(ms(130)), t0.Add(ms(50)), 1200) || c.CongestionWindow() != 48000 {
		t.Fatal("an undo was applied twice")
	}
	// The recovery period went back too: a packet sent before the undone
	// reduction, lost now, is a new congestion event.
	c.OnPacketsLost(t0.Add(ms(140)), t0.Add(ms(60)), 1200)
	if c.CongestionWindow() != 24000 {
		t.Fatalf("loss after undo: cwnd %d, want 24000", c.CongestionWindow())
	}
}

func TestNewRenoUndoNeedsEveryCountedLoss(t *testing.T) {
	c := growReno(t, 48000)
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 2400) // two packets
	c.OnPacketsLost(t0.Add(ms(110)), t0.Add(ms(60)), 1200) // absorbed by the recovery period
	for i, sent := range []int{50, 49} {
		if c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(sent)), 1200) {
			t.Fatalf("undo after %d of 3 spurious losses", i+1)
		}
	}
	if c.CongestionWindow() != 24000 {
		t.Fatalf("cwnd %d before the last report", c.CongestionWindow())
	}
	if !c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(60)), 1200) || c.CongestionWindow() != 48000 {
		t.Fatalf("after all three: cwnd %d", c.CongestionWindow())
	}
}

func TestNewRenoUndoRefusedAfterRealCongestion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(c *NewReno)
	}{
		{"ECN-CE in the recovery period", func(c *NewReno) { c.OnCongestionEvent(t0.Add(ms(110)), t0.Add(ms(40))) }},
		{"ECN-CE reduction", func(c *NewReno) { c.OnCongestionEvent(t0.Add(ms(110)), t0.Add(ms(105))) }},
		{"persistent congestion", func(c *NewReno) { c.OnPersistentCongestion(t0.Add(ms(110))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := growReno(t, 48000)
			c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200)
			tc.after(c)
			cwnd := c.CongestionWindow()
			if c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(50)), 1200) || c.CongestionWindow() != cwnd {
				t.Fatalf("undone: cwnd %d -> %d", cwnd, c.CongestionWindow())
			}
		})
	}
}

func TestNewRenoUndoNeverRaisesAboveSaved(t *testing.T) {
	c := growReno(t, 12000)
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200) // 6000, congestion avoidance
	for c.CongestionWindow() <= 12000 {
		c.OnPacketAcked(t0.Add(ms(200)), t0.Add(ms(150)), 1200, c.CongestionWindow())
	}
	cwnd := c.CongestionWindow()
	if c.OnSpuriousLoss(t0.Add(ms(300)), t0.Add(ms(50)), 1200) || c.CongestionWindow() != cwnd {
		t.Fatalf("cwnd %d -> %d after a late report", cwnd, c.CongestionWindow())
	}
}

func TestNewRenoUndoOnlyTheLatestReduction(t *testing.T) {
	c := growReno(t, 48000)
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200)  // A: 24000
	c.OnPacketsLost(t0.Add(ms(200)), t0.Add(ms(150)), 1200) // B: 12000
	// A's loss belongs to a reduction that B replaced.
	if c.OnSpuriousLoss(t0.Add(ms(210)), t0.Add(ms(50)), 1200) {
		t.Fatal("an older reduction's loss undid the latest")
	}
	if !c.OnSpuriousLoss(t0.Add(ms(210)), t0.Add(ms(150)), 1200) || c.CongestionWindow() != 24000 {
		t.Fatalf("undo of B: cwnd %d, want 24000", c.CongestionWindow())
	}
	// Back in A's recovery period: a packet sent before A is absorbed.
	c.OnPacketsLost(t0.Add(ms(220)), t0.Add(ms(90)), 1200)
	if c.CongestionWindow() != 24000 {
		t.Fatalf("a loss from A's period reduced again: %d", c.CongestionWindow())
	}
}

func TestCubicSpuriousLossUndoesReduction(t *testing.T) {
	c := newTestCubic(fixedRTT(100 * time.Millisecond))
	for c.CongestionWindow() < 48000 {
		c.OnPacketAcked(t0, t0, 1200, c.CongestionWindow())
	}
	// Leave slow start with a first loss, then run congestion avoidance.
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200)
	now := t0.Add(ms(300))
	for range 50 {
		now = now.Add(ms(10))
		c.OnPacketAcked(now, t0.Add(ms(200)), 1200, c.CongestionWindow())
	}
	before := *c
	c.OnPacketsLost(now.Add(ms(10)), now, 1200)
	if c.CongestionWindow() >= before.CongestionWindow() {
		t.Fatalf("no reduction: %d", c.CongestionWindow())
	}
	undoAt := now.Add(ms(60))
	if !c.OnSpuriousLoss(undoAt, now, 1200) {
		t.Fatal("no undo")
	}
	if c.cwnd != before.cwnd || c.ssthresh != before.ssthresh || c.wMax != before.wMax || c.k != before.k ||
		c.wEst != before.wEst || c.cwndPrior != before.cwndPrior || c.recovery != before.recovery {
		t.Fatalf("state after undo %+v, before the reduction %+v", *c, before)
	}
	// The 50 ms the reduction stood do not count on the curve.
	if want := before.epochStart.Add(ms(50)); !c.epochStart.Equal(want) {
		t.Fatalf("epoch %v, want %v", c.epochStart.Sub(t0), want.Sub(t0))
	}
}

func TestCubicUndoRefusedAfterECN(t *testing.T) {
	c := newTestCubic(fixedRTT(100 * time.Millisecond))
	c.OnPacketsLost(t0.Add(ms(100)), t0.Add(ms(50)), 1200)
	c.OnCongestionEvent(t0.Add(ms(110)), t0.Add(ms(50)))
	cwnd := c.CongestionWindow()
	if c.OnSpuriousLoss(t0.Add(ms(120)), t0.Add(ms(50)), 1200) || c.CongestionWindow() != cwnd {
		t.Fatal("undone after ECN-CE")
	}
}
