package quic

import (
	"sync/atomic"

	"github.com/turboretry/turboretry/qlogwriter"
)

// callbackOutbox holds the calls into user code that the connection made
// while it held mu: the events for the Recorder of Config.Tracer (and
// Config.Qlog), the IDs for Transport.ConnectionIDAdded and the streams'
// final sizes. No user callback runs under a lock of ours, so run takes
// the outbox under mu (take) and makes the calls once it released mu
// (Conn.unlockAndDeliver), in the order the events happened.
// Guarded by mu.
type callbackOutbox struct {
	// recorder is Config.Tracer's Recorder; events are recorded for it and
	// not handed over yet; closeRecorder: close it after them.
	recorder      qlogwriter.Recorder
	events        []qlogwriter.Event
	closeRecorder bool
	// recorderClosed is closed once the recorder's Close returned
	// (Conn.traceEnded).
	recorderClosed chan struct{}
	// newRoutes are connection IDs a Transport started routing to us, for
	// its ConnectionIDAdded; run calls it before writing the datagrams
	// that announce them.
	newRoutes []newRoute
	// finalSizes are the streams' final-size callbacks to call
	// (SetReceiveFinalSizeCallback).
	finalSizes []finalSizeCall
	// notifications are the NotifyReadable and NotifyAcceptable
	// callbacks to call.
	notifications []func()
}

// finalSizeCall is a final-size callback with its argument.
type finalSizeCall struct {
	cb   func(int64)
	size int64
}

// newRoute is a connection ID t routes to the connection.
type newRoute struct {
	t   *Transport
	cid []byte
}

// routed queues the ConnectionIDAdded call for cid on t, if t has one.
func (o *callbackOutbox) routed(t *Transport, cid []byte) {
	if t.ConnectionIDAdded != nil && len(cid) > 0 {
		o.newRoutes = append(o.newRoutes, newRoute{t, cid})
	}
}

// record queues ev for the recorder.
func (o *callbackOutbox) record(ev qlogwriter.Event) { o.events = append(o.events, ev) }

// take returns what is to be delivered and empties o; spare (an events
// slice delivered before) takes the next events.
func (o *callbackOutbox) take(spare []qlogwriter.Event) callbackOutbox {
	out := *o
	o.events = spare[:0]
	o.closeRecorder = false
	o.newRoutes, o.finalSizes, o.notifications = nil, nil, nil
	if out.closeRecorder {
		o.recorder = nil
	}
	return out
}

// unlockAndDeliver takes what the callbacks are to be given, releases mu, which the caller holds, and makes the calls
// without it. Only one goroutine at a time delivers: run, or the one
// starting or ending a connection whose run is not going.
func (c *Conn) unlockAndDeliver() {
	spare := c.outSpare
	c.outSpare = nil
	out := c.out.take(spare)
	c.mu.Unlock()
	if events := out.deliver(appCalls{&c.delivering, c.t}); events != nil {
		c.outSpare = events
	}
}

// appCalls marks a goroutine's calls into the application's callbacks,
// which may close the connection or the Transport: CloseWithError and
// Transport.Close must not then wait for that goroutine, the caller.
// conn (Conn.delivering) may be nil.
type appCalls struct {
	conn *atomic.Bool
	t    *Transport
}

func (a appCalls) enter() {
	if a.conn != nil {
		a.conn.Store(true)
	}
	a.t.inCallbacks.Add(1)
}

func (a appCalls) exit() {
	if a.conn != nil {
		a.conn.Store(false)
	}
	a.t.inCallbacks.Add(-1)
}

// deliver makes the calls o holds, in the order they were queued, and
// returns its events slice emptied for reuse (nil if it had none). The
// application's callbacks are made inside app; not the recorder's calls,
// the most frequent, from which nothing may be closed.
func (o *callbackOutbox) deliver(app appCalls) []qlogwriter.Event {
	if len(o.newRoutes) > 0 {
		app.enter()
		for _, r := range o.newRoutes {
			r.t.notifyConnectionID(r.cid)
		}
		app.exit()
	}
	for _, ev := range o.events {
		o.recorder.RecordEvent(ev)
	}
	if o.closeRecorder {
		_ = o.recorder.Close()
		close(o.recorderClosed)
	}
	var spare []qlogwriter.Event
	if o.events != nil {
		clear(o.events)
		spare = o.events[:0]
	}
	if len(o.finalSizes)+len(o.notifications) > 0 {
		app.enter()
		for _, f := range o.finalSizes {
			f.cb(f.size)
		}
		for _, cb := range o.notifications {
			cb()
		}
		app.exit()
	}
	return spare
}
