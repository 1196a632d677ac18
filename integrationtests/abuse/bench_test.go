//go:build linux

package abuse

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/udpio"
)

// BenchmarkFloodAutoRetry is issue 11's benchmark of the auto policy
// against the real server: `turboretry serve` with its defaults, a flood
// of complete one-datagram ClientHellos with fresh connection IDs over
// loopback, as fast as the server answers (at most floodWindow
// unanswered). The first 100 make the server cross AutoRetry's threshold
// (65 become unvalidated connections, which the run then leaves alone);
// each of the b.N that follow is one of the others sent again, which the
// server treats as a fresh attempt since a Retry kept no state. It reports
// Retries per second and the server's CPU time (utime+stime from /proc)
// per flood datagram, the kernel's receive and send paths included. Keep
// the run under the server's 5 s handshake timeout (the default
// -benchtime is), after which the first connections expire and new ones
// are made.
func BenchmarkFloodAutoRetry(b *testing.B) {
	const pool, warmup = 4096, 100
	s := startServer(b)
	a := newFloodAttack(b, s, pool)
	waitedOut := 0
	for i := range warmup {
		if err := a.send(i, i, &waitedOut); err != nil {
			b.Fatal(err)
		}
	}
	a.settle(warmup)
	retries, others := a.counts()
	if others > 70 || retries < warmup-70 {
		b.Fatalf("warm-up: %d Retries and %d connections of %d Initials, want about 35 and 65", retries, others, warmup)
	}
	// The Initials the server retried: every send of one is a new attempt.
	var cycle []int
	a.mu.Lock()
	for i := range a.pkts {
		if a.first[i] != answerOther && !a.connected[i] {
			cycle = append(cycle, i)
		}
	}
	answered0, retries0 := a.allAnswers, a.allRetries
	a.mu.Unlock()

	const batch = 32 // datagrams per sendmmsg
	w, err := udpio.NewWriter(a.pc, udpio.WriterConfig{Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	to := a.server.AddrPort()
	answered := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.allAnswers - answered0
	}

	cpu0 := s.cpu()
	start := time.Now()
	b.ResetTimer()
	sent := a.floodWindowed(b, w, batch, answered, func(i int) udpio.Message {
		return udpio.Message{Buf: a.pkts[cycle[i%len(cycle)]], Addr: to}
	})
	b.StopTimer()
	elapsed := time.Since(start)
	cpu := s.cpu() - cpu0
	a.mu.Lock()
	gotRetries := a.allRetries - retries0
	a.mu.Unlock()
	b.ReportMetric(float64(gotRetries)/elapsed.Seconds(), "retries/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(sent), "server-cpu-ns/pkt")
	b.ReportMetric(100*float64(gotRetries)/float64(sent), "%retried")
}

// floodWindowed sends Initials while b.Loop runs, msg(i) the i-th, in
// sendmmsg batches of batch through w, keeping at most floodWindow of
// them unanswered, then waits until every one is answered (answered
// counts them); it returns how many it sent. A flood that goes
// unanswered for floodGiveUp fails b.
func (a *floodAttack) floodWindowed(b *testing.B, w *udpio.Writer, batch int, answered func() int, msg func(i int) udpio.Message) int {
	msgs := make([]udpio.Message, batch)
	sent := 0
	for b.Loop() {
		msgs[sent%batch] = msg(sent)
		sent++
		if sent%batch != 0 {
			continue
		}
		for sent-answered() > floodWindow {
			select {
			case <-a.got:
			case <-time.After(floodGiveUp):
				b.Fatalf("no answer for %v after %d flood Initials", floodGiveUp, sent)
			}
		}
		if _, err := w.WriteBatch(msgs); err != nil {
			b.Fatal(err)
		}
	}
	if n := sent % batch; n > 0 {
		if _, err := w.WriteBatch(msgs[:n]); err != nil {
			b.Fatal(err)
		}
	}
	for answered() < sent {
		select {
		case <-a.got:
		case <-time.After(floodGiveUp):
			b.Fatalf("%d of %d flood Initials unanswered", sent-answered(), sent)
		}
	}
	return sent
}
