package testutil

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("got %d bytes, want 800", len(got))
	}
}

func TestWaitForReturnsOnceTrue(t *testing.T) {
	n := 0
	WaitFor(t, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

func TestKeyRingFromSecret(t *testing.T) {
	a, b := Secret(0x40), Secret(0x60)
	if a[0] != 0x40 || a[1] != 0x41 || b[0] != 0x60 {
		t.Fatalf("secrets %x, %x", a, b)
	}
	if KeyRing(t, a) == nil {
		t.Fatal("no key ring")
	}
}

func TestWaitValueReturnsTheAcceptedValue(t *testing.T) {
	n := 0
	if got := WaitValue(t, "the counter at 3", time.Minute, func() int { n++; return n }, func(v int) bool { return v >= 3 }); got != 3 {
		t.Fatalf("returned %d, want 3", got)
	}
}

func TestServeStopsAndWaitsAtCleanup(t *testing.T) {
	stopped, returned := make(chan struct{}), false
	t.Run("server", func(t *testing.T) {
		Serve(t, func() { <-stopped; returned = true }, func() { close(stopped) })
	})
	if !returned {
		t.Fatal("Cleanup did not wait for serve to return")
	}
}
