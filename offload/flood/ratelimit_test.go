package flood

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := NewTokenBucket(100, 10, t0) // 100 pps, burst 10
	if g, _ := b.Take(t0, 25); g != 10 {
		t.Fatalf("full bucket granted %d, want the burst of 10", g)
	}
	g, wait := b.Take(t0, 5)
	if g != 0 || wait != 10*time.Millisecond {
		t.Fatalf("empty bucket: granted %d wait %v, want 0 and 10ms", g, wait)
	}
	if g, _ := b.Take(t0.Add(50*time.Millisecond), 100); g != 5 {
		t.Fatalf("after 50ms granted %d, want 5", g)
	}
	// The bucket never holds more than the burst, however long it idles.
	if g, _ := b.Take(t0.Add(time.Hour), 100); g != 10 {
		t.Fatalf("after an hour granted %d, want 10", g)
	}
	// A clock going backwards adds nothing.
	if g, _ := b.Take(t0, 1); g != 0 {
		t.Fatalf("backwards clock granted %d", g)
	}
	if g, w := b.Take(t0.Add(time.Hour), 0); g != 0 || w != 0 {
		t.Fatal("asking for nothing")
	}
}

func TestTokenBucketTinyRate(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := NewTokenBucket(0.001, 1, t0)
	b.Take(t0, 1)
	if g, wait := b.Take(t0, 1); g != 0 || wait != 1000*time.Second {
		t.Fatalf("granted %d wait %v, want 1000s", g, wait)
	}
	for _, r := range []float64{0, -1} {
		b := NewTokenBucket(r, 1, t0)
		b.Take(t0, 1)
		if _, wait := b.Take(t0, 1); wait != time.Hour {
			t.Fatalf("rate %v: wait %v, want the one-hour cap", r, wait)
		}
	}
}

// TestRunRateLimited checks the pacing in virtual time: 1000 packets at
// 10 kpps must take one second (minus the first burst), with nothing sent
// faster than the bucket allows.
func TestRunRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &recordSender{timed: true}
		gen, err := NewGenerator(GeneratorConfig{PoolSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st, err := Run(context.Background(), RunConfig{Count: 1000, Duration: time.Minute, Rate: 10000, Batch: 64}, gen, s)
		if err != nil {
			t.Fatal(err)
		}
		if st.Sent != 1000 || st.Errors != 0 || st.Stopped != "count" {
			t.Fatalf("stats %+v", st)
		}
		burst := burstFor(10000, 64)
		// Tokens for all but the first burst must be earned at 10 per ms.
		minTime := time.Duration(1000-burst) * time.Second / 10000
		if took := time.Since(start); took < minTime || took > minTime+time.Millisecond {
			t.Fatalf("took %v, want about %v", took, minTime)
		}
		// At no moment did the sender get more than the bucket allows.
		for i, at := range s.times {
			elapsed := at.Sub(s.times[0])
			allowed := burst + int(elapsed.Seconds()*10000+1e-6) // float slack
			if i+1 > allowed {
				t.Fatalf("packet %d sent after %v, only %d allowed", i+1, elapsed, allowed)
			}
		}
		if st.PPS < 9000 || st.PPS > 11000 {
			t.Fatalf("achieved %v pps, want about 10000", st.PPS)
		}
	})
}

func TestRunStopsAtDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &recordSender{}
		gen, _ := NewGenerator(GeneratorConfig{PoolSize: 1})
		st, err := Run(context.Background(), RunConfig{Count: 1 << 40, Duration: 2 * time.Second, Rate: 100}, gen, s)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stopped != "duration" || st.Sent < 199 || st.Sent > 201 {
			t.Fatalf("stats %+v, want about 200 packets in 2 s", st)
		}
	})
}
