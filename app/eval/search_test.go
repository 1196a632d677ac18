package eval

import (
	"math"
	"testing"
	"time"
)

// fakeDefender sustains every rate up to capacity (sending what it is
// asked) and records the rates it was asked for.
type fakeDefender struct {
	capacity float64
	asked    []float64
}

func (f *fakeDefender) step(rate float64, phase string) Step {
	f.asked = append(f.asked, rate)
	s := Step{Variant: XDP, Run: 1, Phase: phase, Target: rate, SentPPS: rate, Sent: uint64(rate), Retries: uint64(rate), Benign: 10}
	if rate > f.capacity {
		s.Retries = uint64(f.capacity)
		s.Loss = 1 - f.capacity/rate
	}
	s.judge(0.01)
	return s
}

func TestSearchBracketsCapacity(t *testing.T) {
	ladder := []float64{0, 25e3, 50e3, 100e3, 200e3, 400e3}
	for _, capacity := range []float64{30e3, 130e3, 300e3} {
		f := &fakeDefender{capacity: capacity}
		steps, out := search(ladder, 4, f.step)
		if len(steps) != len(f.asked) {
			t.Fatalf("%d steps for %d asks", len(steps), len(f.asked))
		}
		if out.NeverFailed() || out.MaxPPS > capacity || out.FailedPPS <= capacity {
			t.Errorf("capacity %.0f: max %.0f, failed at %.0f; want max <= capacity < failed", capacity, out.MaxPPS, out.FailedPPS)
		}
		// Four geometric bisections of a factor-2 bracket leave at most 2^(1/16).
		if out.FailedPPS/out.MaxPPS > math.Pow(2, 1.0/16)+1e-9 {
			t.Errorf("capacity %.0f: bracket %.0f..%.0f wider than 2^(1/16)", capacity, out.MaxPPS, out.FailedPPS)
		}
		if out.Reason != "loss" {
			t.Errorf("reason %q, want loss", out.Reason)
		}
	}
}

func TestSearchNeverFailing(t *testing.T) {
	f := &fakeDefender{capacity: 1e9}
	steps, out := search([]float64{0, 10, 20}, 3, f.step)
	if len(steps) != 3 || !out.NeverFailed() || out.MaxPPS != 20 {
		t.Fatalf("steps %d, outcome %+v; want the whole ladder, never failed, max 20", len(steps), out)
	}
}

func TestSearchFailingAtFirstRate(t *testing.T) {
	f := &fakeDefender{capacity: 5}
	_, out := search([]float64{0, 100, 200}, 2, f.step)
	if out.MaxPPS > 5 || out.FailedPPS == 0 {
		t.Fatalf("outcome %+v", out)
	}
	// The bisection went below the first failing rate: 50, then 25 or 75.
	if len(f.asked) != 4 || f.asked[2] != 50 {
		t.Fatalf("asked %v", f.asked)
	}
}

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		s    Step
		ok   bool
		why  string
		loss float64
	}{
		{Step{Target: 100, Loss: 0.005}, true, "", 0.01},
		{Step{Target: 100, Loss: 0.02}, false, "loss", 0.01},
		{Step{Target: 100, BenignFailed: 1}, false, "benign", 0.01},
		{Step{Target: 100, BenignFailed: 1, Loss: 0.5}, false, "benign+loss", 0.01},
		{Step{Target: 0, Loss: 0.5}, true, "", 0.01}, // no attack: no flood to lose
	} {
		s := c.s
		s.judge(c.loss)
		if s.OK != c.ok || s.Reason != c.why {
			t.Errorf("%+v: ok %v reason %q, want %v %q", c.s, s.OK, s.Reason, c.ok, c.why)
		}
	}
}

func TestPercentileAndMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	if p := percentile(ds, 0.5); p != 3 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 0.99); p != 5 {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("p50 of nothing = %v", p)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
	if ds[0] != 5 {
		t.Error("percentile sorted its input")
	}
}

func TestOutcomeNoAttackFailure(t *testing.T) {
	s := Step{Variant: QuicGo, Run: 3, Target: 0, BenignFailed: 2, Benign: 10}
	s.judge(0.01)
	o := outcome([]Step{s})
	if o.NeverFailed() || o.MaxPPS != 0 || o.Reason != "no-attack benign" {
		t.Fatalf("outcome %+v of a failed step without attack", o)
	}
	if got := outcomesOf([]Step{s, {Variant: XDP, Run: 1, OK: true}, {Variant: QuicGo, Run: 3, Target: 5, OK: true, SentPPS: 5}}); len(got) != 2 || got[0].Variant != QuicGo || got[1].Variant != XDP {
		t.Fatalf("outcomesOf: %+v", got)
	}
}
