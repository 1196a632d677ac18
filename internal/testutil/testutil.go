// Package testutil is support for tests only: small helpers that many
// packages' tests need, kept in one place so that they are written once.
package testutil

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer that goroutines may write to while a test
// reads it: a server's log, a child process's output.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test, naming what it waited for, after a minute. Inside a synctest
// bubble the clock is the bubble's (and t.Deadline may not be asked
// there, so the bound is fixed). The bound only keeps a broken build from
// hanging: a test must not depend on it.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	WaitValue(tb, what, time.Minute, cond, func(ok bool) bool { return ok })
}

// WaitValue polls get every few milliseconds until done accepts its value,
// and returns that value: counters a test reads are often bumped just after
// the effect it saw. After limit it fails the test naming what it waited
// for and the last value; like WaitFor's, the limit is a hang guard only.
func WaitValue[V any](tb testing.TB, what string, limit time.Duration, get func() V, done func(V) bool) V {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		v := get()
		if done(v) {
			return v
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s; last %+v", what, v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Serve runs serve (a server's Serve loop) on a goroutine of its own and
// registers a Cleanup that calls stop and waits for serve to return, so
// that nothing the server started outlives the test.
func Serve(tb testing.TB, serve, stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve()
	}()
	tb.Cleanup(func() {
		stop()
		<-done
	})
}
