package http3

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// slowStream is a stream whose every Write takes at most perWrite bytes
// and then fails with the deadline's error, as a quic.Stream whose client
// reads perWrite bytes per stall period does.
type slowStream struct {
	perWrite int
	taken    int
	writes   int
}

func (s *slowStream) Write(p []byte) (int, error) {
	s.writes++
	n := min(len(p), s.perWrite)
	s.taken += n
	if n < len(p) {
		return n, os.ErrDeadlineExceeded
	}
	return n, nil
}

func (s *slowStream) SetWriteDeadline(time.Time) error { return nil }
func (s *slowStream) StreamID() quic.StreamID          { return 0 }

// TestStreamWriterSlowReaderIsNotStalled: a client that takes at least
// minStallProgress bytes per stall period is slow, not stalled, however
// large the response's Writes (a 256 KiB Write whose deadline passes after
// 100 KiB goes on); one that takes less is stalled, and counted once.
func TestStreamWriterSlowReaderIsNotStalled(t *testing.T) {
	body := make([]byte, 3*maxStreamWrite)

	slow := &slowStream{perWrite: minStallProgress + minStallProgress/2}
	w := &streamWriter{str: slow, stall: time.Minute, stats: &serverCounters{}}
	if n, err := w.Write(body); n != len(body) || err != nil {
		t.Fatalf("slow reader (%d bytes per stall period): wrote %d of %d, %v", slow.perWrite, n, len(body), err)
	}
	if w.stats.refused[RefusedWriteStall].Load() != 0 {
		t.Fatal("a slow reader counted as a write stall")
	}

	stalled := &slowStream{perWrite: minStallProgress - 1}
	w = &streamWriter{str: stalled, stall: time.Minute, stats: &serverCounters{}}
	n, err := w.Write(body)
	if n != stalled.perWrite || !errors.Is(err, errWriteStalled) || stalled.writes != 1 {
		t.Fatalf("stalled reader (%d bytes per stall period): wrote %d in %d writes, %v; want %d, one write, a stall",
			stalled.perWrite, n, stalled.writes, err, stalled.perWrite)
	}
	if w.stats.refused[RefusedWriteStall].Load() != 1 {
		t.Fatalf("write stalls counted: %d, want 1", w.stats.refused[RefusedWriteStall].Load())
	}

	// The handler's own deadline is never carried over, progress or not.
	own := &slowStream{perWrite: 2 * minStallProgress}
	w = &streamWriter{str: own, stall: time.Minute}
	w.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := w.Write(body); !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errWriteStalled) || own.writes != 1 {
		t.Fatalf("past the handler's deadline: %v after %d writes, want its own deadline after one", err, own.writes)
	}
}
