package http3

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// byteBudget bounds the bytes that the header sections being read on one
// connection may occupy at once. A stream reserves the whole declared
// length of a HEADERS frame before reading its payload and releases it
// once the section is decoded, so no stream ever holds part of the budget
// while it waits for more: streams waiting for budget cannot deadlock each
// other, they only wait for the peer to send the sections already
// admitted. Waiters are served in arrival order, so a large section is
// not starved by a stream of small ones.
type byteBudget struct {
	limit uint64
	// inUse, when set, mirrors the bytes reserved, for the server's stats.
	inUse *atomic.Int64

	mu      sync.Mutex
	used    uint64
	waiters []*budgetWaiter // FIFO
}

type budgetWaiter struct {
	n     uint64
	ready chan struct{} // closed once the bytes are reserved for it
}

// errBudgetWait is returned by acquire when the deadline passed or done
// was closed before the reservation could be made.
var errBudgetWait = errors.New("http3: header budget not available in time")

func newByteBudget(limit uint64, inUse *atomic.Int64) *byteBudget {
	return &byteBudget{limit: limit, inUse: inUse}
}

// acquire reserves n bytes, waiting until they fit, the deadline passes
// (zero: no deadline) or done is closed. n must not exceed the limit.
func (b *byteBudget) acquire(n uint64, deadline time.Time, done <-chan struct{}) error {
	if n > b.limit {
		return errBudgetWait
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.limit {
		b.reserveLocked(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.ready:
		return nil
	case <-expired:
	case <-done:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		return nil // granted while we gave up: keep it, the caller releases it
	default:
	}
	for i, o := range b.waiters {
		if o == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.grantLocked() // the waiters behind us may fit now
	return errBudgetWait
}

// release returns n reserved bytes.
func (b *byteBudget) release(n uint64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.inUse != nil {
		b.inUse.Add(-int64(n))
	}
	b.grantLocked()
	b.mu.Unlock()
}

func (b *byteBudget) reserveLocked(n uint64) {
	b.used += n
	if b.inUse != nil {
		b.inUse.Add(int64(n))
	}
}

// grantLocked reserves budget for the waiters at the head of the queue
// that fit now.
func (b *byteBudget) grantLocked() {
	for len(b.waiters) > 0 {
		w := b.waiters[0]
		if b.used+w.n > b.limit {
			return
		}
		b.reserveLocked(w.n)
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		close(w.ready)
	}
}
