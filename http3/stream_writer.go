package http3

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// writeChunk is what a response usually hands to the QUIC stream in one
// Write (ReadFrom's buffer, until a body is large); 64 KiB is about one GSO
// batch. Each Write waits until most of its data is sent (the writer's
// goroutine sleeps and is woken again), so larger ones cost fewer wakeups
// per byte.
const writeChunk = 64 << 10

// maxStreamWrite is the most a response hands to the QUIC stream in one
// Write, each with a fresh WriteStallTimeout. ReadFrom writes this much at
// a time once a body is large.
const maxStreamWrite = 256 << 10

// minStallProgress is what a client must take per WriteStallTimeout not
// to count as stalled, whatever the size of the Write: a Write whose
// deadline passed after at least this much went on goes on with a fresh
// one, so larger Writes do not raise the rate a slow reader needs.
const minStallProgress = writeChunk

// stallStream is what streamWriter needs of a request stream.
type stallStream interface {
	Write(p []byte) (int, error)
	SetWriteDeadline(t time.Time) error
	StreamID() quic.StreamID
}

// errWriteStalled is the error of a response write that made no progress
// for the server's WriteStallTimeout. It matches os.ErrDeadlineExceeded.
var errWriteStalled = &writeStallError{}

type writeStallError struct{}

func (*writeStallError) Error() string {
	return "http3: response write stalled: the client took no data within the write stall timeout"
}
func (*writeStallError) Timeout() bool        { return true }
func (*writeStallError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// streamWriter is what a response's buffered writer writes to: the
// request stream, in chunks of at most maxStreamWrite bytes, each under a
// write deadline of now+stall or the handler's own deadline
// (http.ResponseController.SetWriteDeadline), whichever comes first.
type streamWriter struct {
	str   stallStream
	stall time.Duration // 0: no stall limit
	// stats counts a stall once, when a write first fails for it (nil:
	// not counted).
	stats *serverCounters
	// testHook is Server.testHookResponseWrite.
	testHook func(quic.StreamID, []byte)

	// mu orders the deadline updates of Write and SetWriteDeadline,
	// which the handler may call from another goroutine to interrupt a
	// blocked write.
	mu      sync.Mutex
	user    time.Time // the handler's deadline; zero: none
	stallAt time.Time // the current chunk's stall deadline; zero: none
	stalled bool      // the stall was counted
}

func (w *streamWriter) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxStreamWrite)]
		w.arm()
		if w.testHook != nil {
			w.testHook(w.str.StreamID(), chunk)
		}
		n, err := w.str.Write(chunk)
		total += n
		p = p[n:]
		if err != nil {
			if n >= minStallProgress && w.stallOnly(err) {
				continue // slow, not stalled: a fresh stall deadline
			}
			return total, w.writeError(err)
		}
	}
	return total, nil
}

// stallOnly reports whether err is the stall deadline's expiry and not
// the handler's own deadline's.
func (w *streamWriter) stallOnly(err error) bool {
	if w.stall <= 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.userDeadlinePassedLocked()
}

// userDeadlinePassedLocked reports whether the handler's own write
// deadline, if it set one, has passed: a deadline error is then the
// handler's, not a stall's.
func (w *streamWriter) userDeadlinePassedLocked() bool {
	return !w.user.IsZero() && !time.Now().Before(w.user)
}

// arm sets the deadline for the next chunk.
func (w *streamWriter) arm() {
	if w.stall <= 0 {
		return // only the handler's deadline, already set on the stream
	}
	w.mu.Lock()
	w.stallAt = time.Now().Add(w.stall)
	_ = w.str.SetWriteDeadline(w.deadlineLocked())
	w.mu.Unlock()
}

func (w *streamWriter) deadlineLocked() time.Time {
	switch {
	case w.user.IsZero():
		return w.stallAt
	case w.stallAt.IsZero() || w.user.Before(w.stallAt):
		return w.user
	}
	return w.stallAt
}

// SetWriteDeadline sets the handler's deadline, waking a blocked write.
func (w *streamWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.user = t
	return w.str.SetWriteDeadline(w.deadlineLocked())
}

// writeError classifies a failed write: an expired stall deadline
// becomes errWriteStalled, the handler's own deadline stays the stream's
// os.ErrDeadlineExceeded, and other errors carry their H3 code.
func (w *streamWriter) writeError(err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return fromQUICError(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.userDeadlinePassedLocked() {
		return err
	}
	if !w.stalled && w.stats != nil {
		w.stalled = true
		w.stats.refuse(RefusedWriteStall)
	}
	return errWriteStalled
}
