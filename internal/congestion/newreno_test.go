package congestion

import (
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestInitialAndMinimumWindow(t *testing.T) {
	// 32 datagrams, as quic-go, counted in 1280-byte units at least.
	for _, tc := range []struct{ mds, initial, minimum int }{
		{1200, 40960, 2400},
		{1280, 40960, 2560},
		{1472, 47104, 2944},
		{1500, 48000, 3000},
		{9000, 288000, 18000},
	} {
		if got := InitialWindow(tc.mds); got != tc.initial {
			t.Errorf("InitialWindow(%d) = %d, want %d", tc.mds, got, tc.initial)
		}
		if got := MinimumWindow(tc.mds); got != tc.minimum {
			t.Errorf("MinimumWindow(%d) = %d, want %d", tc.mds, got, tc.minimum)
		}
	}
}

// newTestReno returns a NewReno controller whose window starts at ten
// 1200-byte datagrams, the RFC 9002 initial window the arithmetic of these
// tests is written around.
func newTestReno() *NewReno {
	c := NewNewReno(nil, 1200)
	c.cwnd = 12000
	return c
}

// newTestCubic is newTestReno for CUBIC.
func newTestCubic(rtt RTTSource) *Cubic {
	c := NewCubic(rtt, 1200)
	c.cwnd = 12000
	return c
}

func TestNewRenoSlowStart(t *testing.T) {
	c := newTestReno()
	if !c.InSlowStart() || c.CongestionWindow() != 12000 {
		t.Fatalf("start: slow start %v cwnd %d", c.InSlowStart(), c.CongestionWindow())
	}
	if !c.CanSend(10800) || c.CanSend(12000) {
		t.Fatal("CanSend must allow up to the window and no further")
	}
	// One window acked while window-limited doubles the window.
	for range 10 {
		c.OnPacketAcked(t0.Add(ms(100)), t0, 1200, 12000)
	}
	if got := c.CongestionWindow(); got != 24000 {
		t.Fatalf("cwnd after one round = %d, want 24000", got)
	}
}

func TestNewRenoAppLimitedDoesNotGrow(t *testing.T) {
	c := newTestReno()
	for range 10 {
		c.OnPacketAcked(t0.Add(ms(100)), t0, 1200, 2400) // far below cwnd/2
	}
	if got := c.CongestionWindow(); got != 12000 {
		t.Fatalf("cwnd grew while application limited: %d", got)
	}
}

func TestNewRenoCongestionAvoidanceOneDatagramPerRTT(t *testing.T) {
	c := newTestReno()
	// Grow to 48000, then lose: ssthresh = cwnd = 24000.
	for range 30 {
		c.OnPacketAcked(t0, t0, 1200, c.CongestionWindow())
	}
	if c.CongestionWindow() != 48000 {
		t.Fatalf("cwnd = %d, want 48000", c.CongestionWindow())
	}
	lossAt := t0.Add(ms(10))
	c.OnPacketsLost(lossAt, t0, 1200)
	if c.CongestionWindow() != 24000 || c.SlowStartThreshold() != 24000 || c.InSlowStart() {
		t.Fatalf("after loss cwnd %d ssthresh %d", c.CongestionWindow(), c.SlowStartThreshold())
	}
	now := lossAt
	for round := 1; round <= 20; round++ {
		before := c.CongestionWindow()
		sent := now
		now = now.Add(ms(100))
		for range before / 1200 {
			c.OnPacketAcked(now, sent.Add(time.Millisecond), 1200, before)
		}
		if got := c.CongestionWindow(); got != before+1200 {
			t.Fatalf("round %d: cwnd %d -> %d, want +1200", round, before, got)
		}
	}
}

func TestNewRenoOneReductionPerRecoveryPeriod(t *testing.T) {
	c := newTestReno()
	sent := t0
	loss1 := t0.Add(ms(100))
	c.OnPacketsLost(loss1, sent, 1200)
	if c.CongestionWindow() != 6000 || !c.InRecovery() {
		t.Fatalf("first loss: cwnd %d recovery %v", c.CongestionWindow(), c.InRecovery())
	}
	// More losses of packets sent before the recovery period began.
	c.OnPacketsLost(loss1.Add(ms(5)), sent.Add(ms(50)), 2400)
	c.OnCongestionEvent(loss1.Add(ms(6)), loss1)
	if c.CongestionWindow() != 6000 {
		t.Fatalf("second reduction in one recovery period: cwnd %d", c.CongestionWindow())
	}
	// ACKs of packets sent before recovery do not grow the window nor end
	// recovery.
	c.OnPacketAcked(loss1.Add(ms(10)), sent.Add(ms(60)), 1200, 6000)
	if c.CongestionWindow() != 6000 || !c.InRecovery() {
		t.Fatal("ACK of a pre-recovery packet changed the window or ended recovery")
	}
	// An ACK of a packet sent after the recovery start ends it.
	c.OnPacketAcked(loss1.Add(ms(200)), loss1.Add(ms(1)), 1200, 6000)
	if c.InRecovery() {
		t.Fatal("recovery did not end")
	}
	// A loss of a packet sent after recovery began starts a new period.
	c.OnPacketsLost(loss1.Add(ms(300)), loss1.Add(ms(2)), 1200)
	if got := c.CongestionWindow(); got != 3000 {
		t.Fatalf("new recovery period: cwnd %d, want 3000", got)
	}
}

func TestNewRenoMinimumWindow(t *testing.T) {
	c := newTestReno()
	now := t0
	for range 10 {
		now = now.Add(ms(100))
		c.OnPacketsLost(now, now.Add(-time.Millisecond), 1200)
		if c.CongestionWindow() < MinimumWindow(1200) {
			t.Fatalf("cwnd %d below the minimum", c.CongestionWindow())
		}
	}
	if c.CongestionWindow() != 2400 {
		t.Fatalf("cwnd %d, want the minimum 2400", c.CongestionWindow())
	}
	// Persistent congestion drops to the minimum and leaves recovery.
	c = newTestReno()
	c.OnPacketsLost(now, now.Add(-ms(1)), 1200)
	c.OnPersistentCongestion(now)
	if c.CongestionWindow() != 2400 || c.InRecovery() {
		t.Fatalf("persistent congestion: cwnd %d recovery %v", c.CongestionWindow(), c.InRecovery())
	}
	// The next loss starts a recovery period even for old packets.
	c.OnPacketsLost(now.Add(ms(1)), now.Add(-ms(2)), 1200)
	if !c.InRecovery() {
		t.Fatal("no recovery after persistent congestion reset")
	}
}

func TestNewRenoSetMaxDatagramSize(t *testing.T) {
	c := NewNewReno(nil, 1200)
	c.SetMaxDatagramSize(1000) // below the QUIC minimum: ignored
	if c.CongestionWindow() != 40960 {
		t.Fatalf("cwnd %d", c.CongestionWindow())
	}
	c.SetMaxDatagramSize(1500)
	if c.CongestionWindow() != 48000 {
		t.Fatalf("initial window not recomputed: %d", c.CongestionWindow())
	}
	c.OnPacketsLost(t0.Add(ms(1)), t0, 1500)
	c.OnPersistentCongestion(t0.Add(ms(1)))
	if c.CongestionWindow() != 3000 {
		t.Fatalf("minimum window with 1500-byte datagrams: %d", c.CongestionWindow())
	}
}
