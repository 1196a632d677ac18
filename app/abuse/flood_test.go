package abuse

import (
	"testing"
	"time"
)

// TestFloodCompleteInitials is issue 11's first attack and first "Done
// when": 6000 complete one-datagram ClientHellos with fresh connection IDs
// at 1000/s (6 s) from one socket that never answers, against the default
// server (--retry auto). The server must answer at least 95 % of them with
// a Retry, keep fewer than 200 live connections and 150 MB of resident
// memory, and serve a benign fetch with quic-go's client and ours, started
// a quarter into the flood, while the flood goes on (if they are not done
// when the 6000 are sent, the flood goes on with fresh Initials until they
// are).
//
// The rate is the attack's shape, not something asserted: the flood never
// leaves more than floodWindow Initials unanswered, so on a loaded machine
// it runs slower rather than overflowing the server's socket, and the
// counts decide.
func TestFloodCompleteInitials(t *testing.T) {
	const (
		total = 6000
		rate  = 1000 // Initials per second
	)
	s := startServer(t)
	ctx := ctxFor(t)
	a := newFloodAttack(t, s.addr, total)
	before := s.scrape()
	sm := s.sample(100 * time.Millisecond)

	var benignErrs []error
	benignDone := make(chan struct{})
	done := func() bool {
		select {
		case <-benignDone:
			return true
		default:
			return false
		}
	}
	start := time.Now()
	sent, waitedOut := 0, 0
	for ; sent < total || !done(); sent++ {
		if sent == total/4 {
			results := benignFetches(ctx, s, "", nil)
			go func() {
				defer close(benignDone)
				for range benignClients {
					benignErrs = append(benignErrs, <-results)
				}
			}()
		}
		if sent == a.len() {
			if sent >= 3*total {
				t.Fatalf("the benign fetches did not finish during %d flood Initials", sent)
			}
			if err := a.more(floodPoolBatch); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Until(start.Add(time.Duration(sent) * time.Second / rate)); d > time.Millisecond {
			time.Sleep(d)
		}
		if err := a.send(sent, sent, &waitedOut); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	a.settle(sent)
	peak := sm.finish(t)
	after := s.scrape()
	peakRSS := s.peakRSSMB()
	goroutines, top := s.goroutineDump()

	retries, others := a.counts()
	serverRetries := after[mRetries] - before[mRetries]
	t.Logf("flood: %d Initials in %v (%.0f/s), %d waited out; first answers: %d Retries (%.1f %%), %d other; the server sent %.0f Retries",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), waitedOut, retries, 100*float64(retries)/float64(sent), others, serverRetries)
	t.Logf("server: peak %.0f live connections, peak %.0f unvalidated, peak RSS %.1f MB, %d goroutines at the end (top: %v)",
		peak[mConns], peak[mUnvalid], peakRSS, goroutines, top[:min(4, len(top))])

	for _, err := range benignErrs {
		if err != nil {
			t.Error("benign fetch during the flood:", err)
		}
	}
	if float64(retries) < 0.95*float64(sent) {
		t.Errorf("%d of %d flood Initials answered with a Retry, want >= 95 %%", retries, sent)
	}
	if serverRetries < float64(retries) {
		t.Errorf("the server counted %.0f Retries sent, fewer than the %d the attacker received", serverRetries, retries)
	}
	if peak[mConns] >= 200 {
		t.Errorf("peak %.0f live connections, want < 200", peak[mConns])
	}
	if peakRSS >= 150 {
		t.Errorf("peak RSS %.1f MB, want < 150 MB", peakRSS)
	}
}
