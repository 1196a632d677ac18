package recovery

import (
	"testing"
	"time"
)

func checkRTT(t *testing.T, r *RTTStats, latest, minRTT, smoothed, rttvar time.Duration) {
	t.Helper()
	if r.LatestRTT() != latest || r.MinRTT() != minRTT || r.SmoothedRTT() != smoothed || r.RTTVar() != rttvar {
		t.Fatalf("latest %v min %v smoothed %v rttvar %v; want %v %v %v %v",
			r.LatestRTT(), r.MinRTT(), r.SmoothedRTT(), r.RTTVar(), latest, minRTT, smoothed, rttvar)
	}
}

func TestRTTBeforeFirstSample(t *testing.T) {
	r := NewRTTStats(0)
	checkRTT(t, &r, 0, 0, 333*time.Millisecond, 166500*time.Microsecond)
	// RFC 9002 6.2.2: the first PTO is 999 ms (333 + 4*166.5).
	if got := r.PTOBase(); got != 999*time.Millisecond {
		t.Fatalf("initial PTO %v, want 999ms", got)
	}
	if r.HasSample() {
		t.Fatal("HasSample before any sample")
	}
	r = NewRTTStats(100 * time.Millisecond)
	checkRTT(t, &r, 0, 0, ms(100), ms(50))
}

func TestRTTFirstSample(t *testing.T) {
	r := NewRTTStats(0)
	// The ack delay is not applied to the first sample (RFC 9002 5.3).
	r.Update(ms(100), ms(20), true, t0)
	checkRTT(t, &r, ms(100), ms(100), ms(100), ms(50))
	if !r.HasSample() || !r.FirstSampleTime().Equal(t0) {
		t.Fatal("first sample not recorded")
	}
}

func TestRTTSubsequentSample(t *testing.T) {
	r := NewRTTStats(0)
	r.Update(ms(100), 0, true, t0)
	// adjusted = 140 - 20 = 120; rttvar = 3/4*50 + 1/4*|100-120| = 42.5;
	// smoothed = 7/8*100 + 1/8*120 = 102.5.
	r.Update(ms(140), ms(20), true, t0)
	checkRTT(t, &r, ms(140), ms(100), 102500*time.Microsecond, 42500*time.Microsecond)
	// A lower sample lowers min_rtt without any ack delay adjustment.
	r.Update(ms(80), ms(50), true, t0)
	if r.MinRTT() != ms(80) {
		t.Fatalf("min_rtt %v, want 80ms", r.MinRTT())
	}
}

func TestRTTAckDelayCappedAfterConfirmation(t *testing.T) {
	// Confirmed: the 80 ms delay is capped at max_ack_delay = 25 ms, so
	// adjusted = 175: rttvar = (3*50 + 75)/4 = 56.25, smoothed =
	// (7*100 + 175)/8 = 109.375.
	r := NewRTTStats(0)
	r.Update(ms(100), 0, true, t0)
	r.Update(ms(200), ms(80), true, t0)
	checkRTT(t, &r, ms(200), ms(100), 109375*time.Microsecond, 56250*time.Microsecond)

	// Not confirmed: the full delay applies, adjusted = 120.
	r = NewRTTStats(0)
	r.Update(ms(100), 0, false, t0)
	r.Update(ms(200), ms(80), false, t0)
	checkRTT(t, &r, ms(200), ms(100), 102500*time.Microsecond, 42500*time.Microsecond)

	// A peer max_ack_delay of 10 ms: adjusted = 190.
	r = NewRTTStats(0)
	r.SetMaxAckDelay(ms(10))
	r.Update(ms(100), 0, true, t0)
	r.Update(ms(200), ms(80), true, t0)
	checkRTT(t, &r, ms(200), ms(100), 111250*time.Microsecond, 60*time.Millisecond)
}

func TestRTTAckDelayNeverBelowMinRTT(t *testing.T) {
	r := NewRTTStats(0)
	r.Update(ms(100), 0, true, t0)
	// 110 - 20 = 90 < min_rtt 100: the delay is ignored, adjusted = 110:
	// rttvar = (150 + 10)/4 = 40, smoothed = (700 + 110)/8 = 101.25.
	r.Update(ms(110), ms(20), true, t0)
	checkRTT(t, &r, ms(110), ms(100), 101250*time.Microsecond, ms(40))
}

func TestRTTDerivedDurations(t *testing.T) {
	r := NewRTTStats(0)
	r.Update(ms(100), 0, true, t0)
	if got := r.LossDelay(); got != 112500*time.Microsecond {
		t.Fatalf("loss delay %v, want 9/8*100ms", got)
	}
	// (100 + 4*50 + 25) * 3
	if got := r.PersistentCongestionDuration(); got != 975*time.Millisecond {
		t.Fatalf("persistent congestion duration %v, want 975ms", got)
	}
	// A latest_rtt above smoothed_rtt sets the loss delay.
	r.Update(ms(200), 0, true, t0)
	if got := r.LossDelay(); got != 225*time.Millisecond {
		t.Fatalf("loss delay %v, want 9/8*200ms", got)
	}
	// Tiny RTTs: kGranularity floors the loss delay and the variance term.
	r = NewRTTStats(0)
	r.Update(100*time.Microsecond, 0, true, t0)
	if r.LossDelay() != Granularity || r.PTOBase() != 100*time.Microsecond+Granularity {
		t.Fatalf("granularity: loss delay %v PTO %v", r.LossDelay(), r.PTOBase())
	}
	// Negative input from a clock going backwards is clamped.
	r.Update(-ms(5), -ms(5), true, t0)
	if r.LatestRTT() != 0 || r.MinRTT() != 0 {
		t.Fatalf("negative sample: latest %v min %v", r.LatestRTT(), r.MinRTT())
	}
}
