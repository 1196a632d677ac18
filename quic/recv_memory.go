package quic

import (
	"sync/atomic"

	"github.com/turboretry/turboretry/internal/qerr"
)

// Receive memory (issue 23). Flow control bounds the offsets a peer may
// send, not the memory its data costs: data scattered over the window
// costs what the receive buffers hold for it, which streambuf reports in
// bytes (RecvBuffer.Footprint, OutOfOrder, Fragments). Each connection
// sums its streams' figures and bounds the out-of-order part
// (Config.MaxReceiveFragments, Config.MaxOutOfOrderReceiveBytes); the
// Transport sums the connections' (Transport.MaxReceiveBuffer stops window
// growth, Transport.MaxReceiveMemory closes the connection holding the
// most out-of-order data). A connection closed for memory frees its
// receive buffers at once, not after its closing period.

const (
	defaultMaxReceiveFragments = 2048
	// minShedOutOfOrder: a connection holding less out-of-order data is
	// not closed for the Transport's memory; closing it would free
	// little. It is also how much the Transport's out-of-order total must
	// grow before a look that found no such connection is taken again.
	minShedOutOfOrder = 64 << 10
	// recvMemoryHardFactor: Transport.MaxReceiveMemory defaults to this
	// times MaxReceiveBuffer.
	recvMemoryHardFactor = 2
)

// recvMemory is what a connection's stream receive buffers hold. Guarded
// by Conn.mu, except the atomics the Transport reads to pick a connection
// to shed.
type recvMemory struct {
	held       int64 // bytes (Footprint) over all streams
	outOfOrder int64 // the part beyond each stream's first gap
	fragments  int   // runs of out-of-order data over all streams
	// heldReported and outOfOrderReported: the part of held and
	// outOfOrder counted in the Transport's totals (syncBudgets).
	heldReported       int64
	outOfOrderReported atomic.Int64
	// shed: the Transport picked this connection to close for memory
	// (Transport.MaxReceiveMemory); its goroutine does it. gone: torn
	// down, it never will.
	shed atomic.Bool
	gone atomic.Bool
}

// recvCharge is what a stream's receive buffer is counted for in its
// connection's recvMemory.
type recvCharge struct {
	held, outOfOrder int64
	fragments        int
}

// charge brings the totals up to date with what s's receive buffer holds
// now; call it after anything that changes it.
func (m *recvMemory) charge(s *stream) {
	if s.recv == nil {
		return
	}
	now := recvCharge{int64(s.recv.Footprint()), int64(s.recv.OutOfOrder()), s.recv.Fragments()}
	m.held += now.held - s.recvCharged.held
	m.outOfOrder += now.outOfOrder - s.recvCharged.outOfOrder
	m.fragments += now.fragments - s.recvCharged.fragments
	s.recvCharged = now
}

// release frees s's receive buffer and its charge.
func (m *recvMemory) release(s *stream) {
	if s.recv == nil {
		return
	}
	s.recv.Release()
	m.charge(s)
}

// overLimit reports whether the out-of-order data is over a per-connection
// limit of conf, and which.
func (m *recvMemory) overLimit(conf *Config) (ClosedByLimitReason, bool) {
	switch {
	case conf.MaxReceiveFragments >= 0 && m.fragments > conf.MaxReceiveFragments:
		return ClosedTooManyGaps, true
	case m.outOfOrder > int64(min(conf.MaxOutOfOrderReceiveBytes, 1<<62)):
		return ClosedOutOfOrderBudget, true
	}
	return 0, false
}

// report brings the Transport's totals up to date with the connection's.
func (m *recvMemory) report(t *Transport) {
	if d := m.held - m.heldReported; d != 0 {
		m.heldReported = m.held
		t.recvBuffered.Add(d)
	}
	if d := m.outOfOrder - m.outOfOrderReported.Load(); d != 0 {
		m.outOfOrderReported.Store(m.outOfOrder)
		t.recvOutOfOrder.Add(d)
	}
}

// unreport takes the connection's totals out of the Transport's, at
// teardown.
func (m *recvMemory) unreport(t *Transport) {
	t.recvBuffered.Add(-m.heldReported)
	t.recvOutOfOrder.Add(-m.outOfOrderReported.Load())
	m.heldReported = 0
	m.outOfOrderReported.Store(0)
	m.gone.Store(true)
	if m.shed.Swap(false) {
		t.recvShedding.Store(false) // picked, but gone first
	}
}

// closeForMemory closes the connection with err for reason (unless it is
// closing already), counts it, and frees every stream's receive buffer
// now: the memory is what the close is for.
func (c *Conn) closeForMemory(reason ClosedByLimitReason, err *qerr.TransportError) {
	if c.close.err == nil {
		c.closeWithError(err)
		c.t.counters.closedByLimit[reason].Add(1)
	}
	for _, s := range c.streams.all {
		c.recvMem.release(s)
	}
}

// shedLocked closes the connection for the Transport's receive memory and
// reports what that freed, which ends the shedding round.
func (c *Conn) shedLocked() {
	c.recvMem.shed.Store(false)
	c.closeForMemory(ClosedReceiveMemory, qerr.NewTransportError(qerr.InternalError, 0, ClosedReceiveMemory.message()))
	c.recvMem.report(c.t)
	c.t.recvShedding.Store(false)
}

// shedReceiveMemory is called while the Transport's receive buffers hold
// more than MaxReceiveMemory: it asks the connection holding the most
// out-of-order data (at least minShedOutOfOrder) to close, one at a time.
// Data in order is left alone: the windows promised it. self is the
// calling connection (its mu held).
func (t *Transport) shedReceiveMemory(self *Conn) {
	ooo := t.recvOutOfOrder.Load()
	if ooo < t.recvShedRescanAt.Load() {
		return // the last look found no connection to close, and little grew since
	}
	if !t.recvShedding.CompareAndSwap(false, true) {
		return // a connection picked earlier has not closed yet
	}
	var victim *Conn
	most := int64(minShedOutOfOrder - 1)
	t.mu.Lock()
	for _, c := range t.handlers {
		if v := c.recvMem.outOfOrderReported.Load(); v > most {
			victim, most = c, v
		}
	}
	t.mu.Unlock()
	t.recvShedRescanAt.Store(0)
	switch victim {
	case nil:
		t.recvShedRescanAt.Store(ooo + minShedOutOfOrder)
		t.recvShedding.Store(false)
	case self:
		self.shedLocked()
	default:
		victim.recvMem.shed.Store(true)
		// A victim torn down meanwhile never sheds: whichever of us
		// takes the flag back ends the round.
		if victim.recvMem.gone.Load() && victim.recvMem.shed.Swap(false) {
			t.recvShedding.Store(false)
			return
		}
		victim.wake()
	}
}

// ClosedByLimitReason says why a connection was closed to bound the
// memory the peer made us hold.
type ClosedByLimitReason uint8

// Reasons for closing a connection over a memory limit; String gives the
// label TransportStats uses.
const (
	// ClosedTooManyGaps: the connection's streams held more runs of
	// out-of-order data than Config.MaxReceiveFragments. Closed with
	// PROTOCOL_VIOLATION.
	ClosedTooManyGaps ClosedByLimitReason = iota
	// ClosedOutOfOrderBudget: the connection's out-of-order stream data
	// held more than Config.MaxOutOfOrderReceiveBytes. Closed with
	// PROTOCOL_VIOLATION.
	ClosedOutOfOrderBudget
	// ClosedReceiveMemory: the Transport's receive buffers held more than
	// Transport.MaxReceiveMemory and this connection held the most
	// out-of-order data. Closed with INTERNAL_ERROR.
	ClosedReceiveMemory

	numClosedByLimitReasons
)

var closedByLimitLabels = [numClosedByLimitReasons]string{"too_many_gaps", "out_of_order_budget", "receive_memory"}

var closedByLimitMessages = [numClosedByLimitReasons]string{
	"too many gaps in the connection's stream data",
	"too much out-of-order stream data",
	"server receive memory exhausted",
}

// String returns the reason's label, as in TransportStats.ClosedByLimit.
func (r ClosedByLimitReason) String() string {
	if r < numClosedByLimitReasons {
		return closedByLimitLabels[r]
	}
	return "unknown"
}

func (r ClosedByLimitReason) message() string { return closedByLimitMessages[r] }
