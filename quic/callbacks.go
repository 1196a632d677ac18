package quic

import (
	"log/slog"

	"github.com/turboretry/turboretry/qlogwriter"
)

// callbackOutbox holds the calls into user code that the connection made
// while it held mu: the events for Config.Tracer's Recorder, the qlog
// records for Config.Qlog's writer, the IDs for
// Transport.ConnectionIDAdded and the streams' final sizes. No user callback runs under a lock of
// ours, so run takes the outbox under mu (take) and makes the calls once it
// released mu (Conn.deliverOutbox), in the order the events happened.
// Guarded by mu.
type callbackOutbox struct {
	// recorder is Config.Tracer's Recorder; events are recorded for it and
	// not handed over yet; closeRecorder: close it after them.
	recorder      qlogwriter.Recorder
	events        []qlogwriter.Event
	closeRecorder bool
	// qlog's qlogChunk is a full buffer of records to write; qlogEnded is
	// a qlogger the connection is done with, to write out and close.
	qlog      *qlogger
	qlogChunk []byte
	qlogEnded *qlogger
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
	o.closeRecorder, o.qlog, o.qlogChunk, o.qlogEnded = false, nil, nil, nil
	o.newRoutes, o.finalSizes, o.notifications = nil, nil, nil
	if out.closeRecorder {
		o.recorder = nil
	}
	return out
}

// takeOutboxLocked takes what the callbacks are to be given, with mu held;
// a full qlog buffer goes along.
func (c *Conn) takeOutboxLocked() callbackOutbox {
	if q := c.qlog; q != nil {
		q.takeChunk(&c.out)
	}
	spare := c.outSpare
	c.outSpare = nil
	return c.out.take(spare)
}

// deliverOutbox makes the calls taken by takeOutboxLocked, without mu; only
// one goroutine at a time (run, or the one starting the connection).
func (c *Conn) deliverOutbox(out callbackOutbox) {
	for _, r := range out.newRoutes {
		r.t.notifyConnectionID(r.cid)
	}
	for _, ev := range out.events {
		out.recorder.RecordEvent(ev)
	}
	if out.closeRecorder {
		_ = out.recorder.Close()
	}
	if out.events != nil {
		clear(out.events)
		c.outSpare = out.events[:0]
	}
	if out.qlogChunk != nil {
		out.qlog.write(out.qlogChunk)
	}
	if q := out.qlogEnded; q != nil {
		q.close()
	}
	for _, f := range out.finalSizes {
		f.cb(f.size)
	}
	for _, cb := range out.notifications {
		cb()
	}
}

// flushOutbox delivers the outbox at once: for the goroutine that starts or
// ends a connection whose run is not going (or no longer).
func (c *Conn) flushOutbox() {
	c.mu.Lock()
	out := c.takeOutboxLocked()
	c.mu.Unlock()
	c.deliverOutbox(out)
}

// logQlogError logs a qlog writer's failure.
func logQlogError(err error) {
	slog.Warn("quic: qlog write failed; no more qlog for this connection", "err", err)
}
