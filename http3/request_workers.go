package http3

import (
	"context"
	"runtime/pprof"
	"sync"
	"time"
)

// requestWorkers runs request handlers on goroutines that outlive one
// request: a goroutine that finished a request waits a moment for the
// next one, of any connection of the Server. A new goroutine per request
// starts on a small stack and grows it, copying it each time, as the
// request goes down the handler chain; a reused one has grown already.
// The zero value is ready to use. A handler that leaves its goroutine
// locked to its thread (runtime.LockOSThread without Unlock) keeps the
// worker locked for the requests after it; on a goroutine of its own the
// thread would have ended with it. net/http handlers have no reason to.
type requestWorkers struct {
	once sync.Once
	// handoff is unbuffered: a send succeeds only when a worker waits.
	handoff chan func()
	// quit, closed by stop, ends the workers as they finish.
	quit     chan struct{}
	stopOnce sync.Once
}

func (rw *requestWorkers) init() {
	rw.once.Do(func() {
		rw.handoff = make(chan func())
		rw.quit = make(chan struct{})
	})
}

// workerIdleTimeout is how long a worker waits for another request
// before it ends: long enough to carry a busy server from one request to
// the next, short enough that an idle server holds no worker for long.
const workerIdleTimeout = time.Second

// run calls fn on a waiting worker, or on a new goroutine when none waits.
func (rw *requestWorkers) run(fn func()) {
	rw.init()
	select {
	case rw.handoff <- fn:
	default:
		go rw.work(fn)
	}
}

// work runs fn, then the requests handed to it until none came for
// workerIdleTimeout.
func (rw *requestWorkers) work(fn func()) {
	var idle *time.Timer
	for {
		fn()
		// Profiler labels a handler set are its request's, not the next.
		pprof.SetGoroutineLabels(context.Background())
		if idle == nil {
			idle = time.NewTimer(workerIdleTimeout)
		} else {
			idle.Reset(workerIdleTimeout)
		}
		select {
		case fn = <-rw.handoff:
		case <-idle.C:
			return
		case <-rw.quit:
			idle.Stop()
			return
		}
	}
}

// stop ends the waiting workers, and each busy one once its request is
// done (Server.Close). Requests run after it get goroutines of their own.
func (rw *requestWorkers) stop() {
	rw.init()
	rw.stopOnce.Do(func() { close(rw.quit) })
}
