package interop

import (
	"bytes"
	"sync"
)

// logBuffer keeps everything the server logs and lets readers wait for
// the next write instead of polling.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed (and replaced) on every write
}

func newLogBuffer() *logBuffer {
	return &logBuffer{changed: make(chan struct{})}
}

// Write appends p; slog's handlers call it from the server's goroutines.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// snapshot returns a copy of the log so far and a channel that is closed
// at the next write, so "check, then wait" cannot miss a line.
func (b *logBuffer) snapshot() ([]byte, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes()), b.changed
}

// String returns the log so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
