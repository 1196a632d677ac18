package quic

import "sync"

const (
	// maxRecvQueue bounds the datagrams waiting for a connection's
	// goroutine; more are dropped (DropRecvQueueFull) as congestion.
	maxRecvQueue = 256
	// keptRecvQueue is the receive-queue capacity a quiet connection
	// keeps (inbox.shrink).
	keptRecvQueue = 16
)

// inbox is the datagrams the Transport handed a connection and its
// goroutine has not taken yet (queue), and an empty slice to queue into
// next (spare). Both grow on demand and shrink when idle. Its lock is a
// leaf, apart from Conn.mu: the read loop queues without Conn.mu, so a
// busy connection never stalls it.
type inbox struct {
	mu    sync.Mutex
	queue []receivedPacket
	spare []receivedPacket
}

// push queues p; it reports whether p was queued (else the queue is full
// and p is the caller's to drop) and whether it is the first waiting.
func (in *inbox) push(p receivedPacket) (queued, first bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queue) >= maxRecvQueue {
		return false, false
	}
	if in.queue == nil {
		in.queue, in.spare = in.spare, nil
	}
	in.queue = append(in.queue, p)
	return true, len(in.queue) == 1
}

// take returns the queued datagrams; give the slice back with done.
func (in *inbox) take() []receivedPacket {
	in.mu.Lock()
	q := in.queue
	in.queue = nil
	in.mu.Unlock()
	return q
}

// done keeps a processed batch's slice for the next one, so steady
// traffic allocates nothing.
func (in *inbox) done(q []receivedPacket) {
	clear(q)
	in.mu.Lock()
	if in.spare == nil {
		in.spare = q[:0]
	}
	in.mu.Unlock()
}

// shrink drops large slices when the connection is quiet (its timer fired
// twice with nothing received in between): a burst's memory goes back,
// and a quiet connection holds small slices only.
func (in *inbox) shrink() {
	in.mu.Lock()
	if cap(in.spare) > keptRecvQueue {
		in.spare = nil
	}
	if len(in.queue) == 0 && cap(in.queue) > keptRecvQueue {
		in.queue = nil
	}
	in.mu.Unlock()
}

// release drops the empty slices, for a connection that parks: it
// allocates them again when datagrams come.
func (in *inbox) release() {
	in.mu.Lock()
	in.spare = nil
	if len(in.queue) == 0 {
		in.queue = nil
	}
	in.mu.Unlock()
}

// drop frees the datagrams still queued, at teardown.
func (in *inbox) drop() {
	in.mu.Lock()
	q := in.queue
	in.queue, in.spare = nil, nil
	in.mu.Unlock()
	for _, p := range q {
		putBuffer(p.buf)
	}
}
