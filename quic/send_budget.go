package quic

import (
	"math"
	"sync"
	"sync/atomic"
)

// Memory budgets for buffered stream data. A stream's writer may queue what
// the peer's flow control lets us send (and a write of up to writeTail
// bytes beyond it, see writeRoom); its
// connection holds at most Config.MaxConnectionSendBuffer of written and
// unacknowledged data, and all connections of a Transport at most
// Transport.MaxSendBuffer. Beyond any of them Write waits. On the receive
// side flow control bounds each connection's offsets and recv_memory.go
// the bytes its buffers hold; Transport.MaxReceiveBuffer stops windows
// from growing.
const (
	// writeTail is the most a stream may hold queued beyond the peer's
	// flow control credit: a Write whose data, with what is queued, fits
	// one packet is taken whole (quic-go does the same, so that Close can
	// put the FIN on that last frame); a larger one only as far as credit
	// goes, so a Write that times out reports exactly the bytes flow
	// control let through, as quic-go's does.
	writeTail = 1452

	// writeDrain is how much of a Write's data may still be unsent when
	// it returns (drainLocked): like quic-go's, a Write lasts until its
	// data is on its way, so a STOP_SENDING meanwhile fails it, while one
	// chunk left keeps the packer busy until the next Write comes.
	writeDrain = 16 << 10

	defaultTransportSendBuffer = 256 << 20
	defaultTransportRecvBuffer = 256 << 20
)

// memoryBudget is a connection's share of the memory budgets. Guarded by
// Conn.mu; the Transport's totals are atomics of its own.
type memoryBudget struct {
	// sendHeld is the stream data held for sending (written and not
	// acknowledged); sendReported the part of it counted in the
	// Transport's totals. The receive side is recvMemory's.
	sendHeld     int64
	sendReported int64
	// sig is broadcast for writers waiting for the connection's budget.
	sig chan struct{}
}

// budgetOrDefault returns v (0: def) as an int64 budget.
func budgetOrDefault(v, def uint64) int64 {
	if v == 0 {
		v = def
	}
	return int64(min(v, math.MaxInt64))
}

// sendBudget is the Transport-wide bound on buffered send data, shared by
// the connections' goroutines and their writers.
type sendBudget struct {
	used atomic.Int64
	peak atomic.Int64 // the highest used so far
	max  int64        // set once at Transport init

	mu      sync.Mutex
	sig     chan struct{} // closed when used drops; made by waiters
	waiting atomic.Bool
}

// take reserves up to n bytes and returns how many it got (0: none left).
// Only writers take, so used never exceeds max.
func (b *sendBudget) take(n int64) int64 {
	for {
		u := b.used.Load()
		g := min(n, b.max-u)
		if g <= 0 {
			return 0
		}
		if b.used.CompareAndSwap(u, u+g) {
			for p := b.peak.Load(); u+g > p && !b.peak.CompareAndSwap(p, u+g); p = b.peak.Load() {
			}
			return g
		}
	}
}

// add gives bytes back (negative delta) and wakes waiting writers.
func (b *sendBudget) add(delta int64) {
	b.used.Add(delta)
	if delta < 0 && b.waiting.Load() {
		b.mu.Lock()
		b.waiting.Store(false)
		broadcast(&b.sig)
		b.mu.Unlock()
	}
}

// waitChan returns a channel closed by the next decrease. Try take again
// after getting it: a decrease in between is otherwise missed.
func (b *sendBudget) waitChan() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting.Store(true)
	return waitChan(&b.sig)
}

// sendHeldBy returns the buffered send bytes stream s accounts for.
func (s *stream) sendHeldBy() int64 {
	if !s.hasSend || s.removed || s.send.IsReset() {
		return 0
	}
	return int64(s.send.Buffered())
}

// charge brings the connection's send total up to date with what s holds
// now; call it after anything that changes s.send's contents.
func (b *memoryBudget) charge(s *stream) {
	h := s.sendHeldBy()
	if h == s.sendCharged {
		return
	}
	b.sendHeld += h - s.sendCharged
	if h < s.sendCharged {
		broadcast(&b.sig)
	}
	s.sendCharged = h
}

// syncBudgets reports the connection's send and receive totals to the
// Transport, once per batch of work rather than per frame. Writes take
// their bytes from the Transport's budget when they queue them, so only
// what acknowledgements and resets gave back is left to report here.
// Over Transport.MaxReceiveMemory it starts shedding.
func (c *Conn) syncBudgets() {
	if c.close.finished {
		return // teardown gives everything back (memoryBudget.release)
	}
	if d := c.budget.sendHeld - c.budget.sendReported; d != 0 {
		c.budget.sendReported = c.budget.sendHeld
		c.t.sendBudget.add(d)
	}
	c.recvMem.report(c.t)
	if c.t.recvBuffered.Load() > c.t.maxRecvMemory {
		c.t.shedReceiveMemory(c)
	}
}

// release gives back to Transport t everything the connection accounted
// for (its streams' send data, and recvMem), at teardown.
func (b *memoryBudget) release(streams map[uint64]*stream, recvMem *recvMemory, t *Transport) {
	for _, s := range streams {
		s.sendCharged = 0
	}
	b.sendHeld = 0
	if b.sendReported != 0 {
		t.sendBudget.add(-b.sendReported)
		b.sendReported = 0
	}
	recvMem.unreport(t)
}

// recvGrowthAllowed reports whether receive windows may grow now
// (Transport.MaxReceiveBuffer, against the bytes receive buffers hold).
func (c *Conn) recvGrowthAllowed() bool { return c.t.recvBuffered.Load() < c.t.maxRecvBuf }

// writeRoom returns how many bytes s's writer may queue now as far as the
// peer's flow control and the connection's budget go, and which of them
// binds when it is 0 (budgetNone: flow control). whole is the size of the
// write asking (0 for none that may pass credit, TryWriteAll): it is let
// through whole when it fits writeTail with what is queued. The
// Transport's budget is taken separately (sendBudget.take).
func (s *stream) writeRoom(whole int64) (int64, budgetKind) {
	c := s.c
	unsent := int64(s.send.Unsent())
	room := int64(min(s.fcSend.Available(), maxStreamBuffered)) - unsent
	if whole > 0 && room < whole && unsent+whole <= writeTail {
		room = whole
	}
	if room <= 0 {
		return 0, budgetNone
	}
	if cr := int64(min(c.config.MaxConnectionSendBuffer, math.MaxInt64)) - c.budget.sendHeld; cr < room {
		if cr <= 0 {
			return 0, budgetConn
		}
		room = cr
	}
	return room, budgetNone
}

// budgetKind names the bound a waiting writer waits for.
type budgetKind uint8

const (
	budgetNone      budgetKind = iota // flow control (or nothing)
	budgetConn                        // Config.MaxConnectionSendBuffer
	budgetTransport                   // Transport.MaxSendBuffer
)
