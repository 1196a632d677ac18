package congestion

import (
	"testing"
	"time"
)

// RFC 9406 section 4.3 constants, spelled out so that the tests do not
// trust the implementation's own.
const (
	rfcNRTTSample       = 8
	rfcCSSGrowthDivisor = 4
	rfcCSSRounds        = 5
)

// latestRTT is an RTTSource whose latest sample the test sets.
type latestRTT struct{ rtt time.Duration }

func (l *latestRTT) SmoothedRTT() time.Duration { return l.rtt }
func (l *latestRTT) MinRTT() time.Duration      { return l.rtt }
func (l *latestRTT) LatestRTT() time.Duration   { return l.rtt }

// slowStarter is a controller under test with its HyStart++ state.
type slowStarter struct {
	name    string
	cc      Controller
	hystart *hystart
	rtt     *latestRTT
	now     time.Time // when the next round's packets are sent
}

func slowStarters() []*slowStarter {
	rttR, rttC := &latestRTT{}, &latestRTT{}
	reno, cubic := NewNewReno(rttR, 1200), NewCubic(rttC, 1200)
	return []*slowStarter{
		{name: "NewReno", cc: reno, hystart: &reno.hystart, rtt: rttR, now: t0},
		{name: "CUBIC", cc: cubic, hystart: &cubic.hystart, rtt: rttC, now: t0},
	}
}

// round sends one window of 1200-byte packets at once and acknowledges
// them one per ACK, a microsecond apart, each ACK carrying an RTT sample
// of rtt, while the sender stays window-limited. It returns the window
// growth each ACK earned.
func (s *slowStarter) round(rtt time.Duration) []int {
	n := s.cc.CongestionWindow() / 1200
	sent := s.now
	s.rtt.rtt = rtt
	growth := make([]int, n)
	var ackAt time.Time
	for i := range n {
		ackAt = sent.Add(rtt + time.Duration(i)*time.Microsecond)
		before := s.cc.CongestionWindow()
		s.cc.OnPacketAcked(ackAt, sent, 1200, s.cc.CongestionWindow())
		growth[i] = s.cc.CongestionWindow() - before
	}
	s.now = ackAt
	return growth
}

// wantGrowth checks the per-ACK growth of a round: full until ack
// number fullUntil (1-based, inclusive), then the given rate.
func wantGrowth(t *testing.T, what string, growth []int, fullUntil, rest int) {
	t.Helper()
	for i, g := range growth {
		want := rest
		if i < fullUntil {
			want = 1200
		}
		if g != want {
			t.Fatalf("%s: ACK %d grew the window by %d, want %d", what, i+1, g, want)
		}
	}
}

func TestHyStartSteadyRTTStaysInSlowStart(t *testing.T) {
	for _, s := range slowStarters() {
		t.Run(s.name, func(t *testing.T) {
			for r := range 6 {
				before := s.cc.CongestionWindow()
				s.round(ms(50))
				if s.hystart.inCSS() || !s.cc.InSlowStart() || s.cc.CongestionWindow() != before+before/1200*1200 {
					t.Fatalf("round %d: css %v slow start %v cwnd %d -> %d", r+1, s.hystart.inCSS(), s.cc.InSlowStart(), before, s.cc.CongestionWindow())
				}
			}
		})
	}
}

// TestHyStartDelayIncreaseEntersCSSThenExits raises the RTT by the RFC's
// threshold for a 50 ms base (50/8 = 6.25 ms): the eighth sample of that
// round moves the sender to Conservative Slow Start, which grows a quarter
// as fast, and after CSS_ROUNDS rounds there slow start is over.
func TestHyStartDelayIncreaseEntersCSSThenExits(t *testing.T) {
	for _, s := range slowStarters() {
		t.Run(s.name, func(t *testing.T) {
			for range 3 {
				s.round(ms(50))
			}
			raised := ms(50) + ms(50)/8
			wantGrowth(t, "round of the increase", s.round(raised), rfcNRTTSample-1, 1200/rfcCSSGrowthDivisor)
			if !s.hystart.inCSS() || !s.cc.InSlowStart() {
				t.Fatalf("css %v slow start %v after the increase", s.hystart.inCSS(), s.cc.InSlowStart())
			}
			// The round of the increase was the first in CSS.
			for r := 2; r <= rfcCSSRounds; r++ {
				wantGrowth(t, "CSS round", s.round(raised), 0, 1200/rfcCSSGrowthDivisor)
				if !s.cc.InSlowStart() {
					t.Fatalf("slow start over after %d CSS rounds", r)
				}
			}
			// The first ACK of the next round completes the fifth.
			cwnd := s.cc.CongestionWindow()
			s.round(raised)
			if s.cc.InSlowStart() {
				t.Fatal("still in slow start after CSS_ROUNDS rounds of CSS")
			}
			// In congestion avoidance a round adds at most about one
			// datagram per round (NewReno) or follows the curve's plateau.
			if grown := s.cc.CongestionWindow() - cwnd; grown > 2*1200 {
				t.Fatalf("window grew by %d in the round after slow start ended", grown)
			}
		})
	}
}

// TestHyStartSpuriousDelayIncrease lets the RTT fall back in the round
// after the increase: eight samples below the level that started CSS
// resume standard slow start.
func TestHyStartSpuriousDelayIncrease(t *testing.T) {
	for _, s := range slowStarters() {
		t.Run(s.name, func(t *testing.T) {
			for range 3 {
				s.round(ms(50))
			}
			s.round(ms(57))
			if !s.hystart.inCSS() {
				t.Fatal("no CSS after the increase")
			}
			// ACKs 1-7 grow at the CSS rate, the eighth ends CSS.
			growth := s.round(ms(50))
			wantGrowth(t, "CSS ACKs", growth[:rfcNRTTSample-1], 0, 1200/rfcCSSGrowthDivisor)
			wantGrowth(t, "ACKs after CSS", growth[rfcNRTTSample-1:], len(growth), 0)
			if s.hystart.inCSS() || !s.cc.InSlowStart() {
				t.Fatalf("css %v slow start %v after the RTT fell back", s.hystart.inCSS(), s.cc.InSlowStart())
			}
			// Many rounds later slow start goes on: the CSS round count
			// started over.
			for range 3 {
				before := s.cc.CongestionWindow()
				s.round(ms(50))
				if s.cc.CongestionWindow() != before+before/1200*1200 {
					t.Fatalf("cwnd %d -> %d, want a datagram per ACK", before, s.cc.CongestionWindow())
				}
			}
		})
	}
}

// TestHyStartThreshold checks the clamp of the delay threshold:
// max(MIN_RTT_THRESH 4 ms, min(lastRoundMinRTT/8, MAX_RTT_THRESH 16 ms)).
func TestHyStartThreshold(t *testing.T) {
	for _, tc := range []struct {
		base, increase time.Duration
		css            bool
	}{
		{ms(10), ms(4) - time.Microsecond, false},
		{ms(10), ms(4), true},
		{ms(80), ms(10) - time.Microsecond, false},
		{ms(80), ms(10), true},
		{ms(200), ms(16) - time.Microsecond, false},
		{ms(200), ms(16), true},
	} {
		s := slowStarters()[0]
		s.round(tc.base)
		s.round(tc.base + tc.increase)
		if s.hystart.inCSS() != tc.css {
			t.Errorf("base %v, increase %v: css %v, want %v", tc.base, tc.increase, s.hystart.inCSS(), tc.css)
		}
	}
}

// TestHyStartNeedsEnoughSamples: fewer than N_RTT_SAMPLE samples in a
// round, however high, decide nothing.
func TestHyStartNeedsEnoughSamples(t *testing.T) {
	h := newHystart()
	sent := t0
	now := t0.Add(ms(50))
	for i := range 40 {
		h.onAck(now.Add(time.Duration(i)*time.Microsecond), sent, ms(50))
	}
	sent = now.Add(ms(1))
	now = sent.Add(ms(100))
	for i := range rfcNRTTSample - 1 {
		// Each packet of one ACK shares its sample.
		for range 3 {
			h.onAck(now.Add(time.Duration(i)*time.Microsecond), sent, ms(100))
		}
	}
	if h.inCSS() {
		t.Fatal("CSS after seven samples")
	}
	h.onAck(now.Add(ms(1)), sent, ms(100))
	if !h.inCSS() {
		t.Fatal("no CSS after the eighth sample")
	}
}

// TestHyStartOnlyInFirstSlowStart: after a loss set ssthresh, a later
// slow start is left to the threshold, delay increase or not.
func TestHyStartOnlyInFirstSlowStart(t *testing.T) {
	for _, s := range slowStarters() {
		t.Run(s.name, func(t *testing.T) {
			s.round(ms(50))
			s.cc.OnPacketsLost(s.now, s.now.Add(-ms(1)), 1200)
			s.cc.OnPersistentCongestion(s.now)
			s.now = s.now.Add(ms(1))
			s.round(ms(50))
			s.round(ms(50))
			s.round(ms(80))
			if s.hystart.inCSS() {
				t.Fatal("HyStart++ ran in a slow start after a loss")
			}
		})
	}
}

func TestHyStartAckDoesNotAllocate(t *testing.T) {
	for _, s := range slowStarters() {
		s.round(ms(50))
		sent := s.now
		now := sent.Add(ms(60))
		allocs := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Microsecond)
			s.cc.OnPacketAcked(now, sent, 1200, s.cc.CongestionWindow())
		})
		if allocs != 0 {
			t.Fatalf("%s: %v allocations per ACK", s.name, allocs)
		}
	}
}
