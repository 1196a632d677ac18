package quic

import (
	"net/netip"
	"strconv"

	"github.com/turboretry/turboretry/qlog"
)

// Tuple IDs in Config.Tracer's events, as quic-go assigns them: packet
// events on the path the connection uses carry the tuple "", those on
// another path that path's ID, announced first by a tuple_assigned event.
// A client's first path is "0" and each AddPath the next number; on
// Switch the old path gets its ID and "" moves to the new one. A server
// numbers the other peer addresses it hears from, from "0"; when it
// follows the peer to one, "" moves there.

// pathOn returns the client path on Transport t when the connection does
// not send there, or nil.
func (c *Conn) pathOn(t *Transport) *Path {
	if !c.isClient || t == nil || t == c.path.sendT {
		return nil
	}
	for _, p := range c.path.extra {
		if p.t == t && !p.closed {
			return p
		}
	}
	return nil
}

// tupleOfTransport is the tuple ID of a client's path by its Transport.
func (c *Conn) tupleOfTransport(t *Transport) string {
	if t == nil || t == c.path.sendT {
		return ""
	}
	for _, p := range c.path.extra {
		if p.t == t {
			return p.tupleID
		}
	}
	return "0" // the connection's first Transport, after a Switch
}

// traceRxTuple sets the tuple of the datagram being processed.
func (c *Conn) traceRxTuple() {
	if c.isClient {
		c.trace.rxTuple = c.tupleOfTransport(c.path.rx.via)
		return
	}
	c.trace.rxTuple = ""
	if c.path.rx.other {
		c.trace.rxTuple = c.serverTuple(c.path.rx.from)
	}
}

// tracePathTuple announces a client path before its first datagram and
// makes it the tuple of the datagram being built.
func (c *Conn) tracePathTuple(p *Path) {
	if !p.tupleLogged {
		p.tupleLogged = true
		c.trace.record(qlog.TupleAssigned{TupleID: p.tupleID, Local: tupleEndpoint(p.t.Conn.LocalAddr()), Remote: tupleEndpoint(c.path.remote)})
	}
	c.trace.txTuple = p.tupleID
}

// traceSwitch records a client's Switch to p: the path left gets its own
// ID, and "" is p's from now on.
func (c *Conn) traceSwitch(p *Path) {
	c.trace.record(qlog.TupleAssigned{TupleID: c.prevTupleID(), Local: tupleEndpoint(c.path.sendT.Conn.LocalAddr()), Remote: tupleEndpoint(c.path.remote)})
	c.trace.record(qlog.TupleAssigned{Local: tupleEndpoint(p.t.Conn.LocalAddr()), Remote: tupleEndpoint(c.path.remote)})
}

// prevTupleID is the ID of the client path in use (before a Switch).
func (c *Conn) prevTupleID() string {
	for _, p := range c.path.extra {
		if p.t == c.path.sendT {
			return p.tupleID
		}
	}
	return "0"
}

// serverTuple returns the tuple ID of peer address ap on a server,
// announcing it the first time.
func (c *Conn) serverTuple(ap netip.AddrPort) string {
	t := c.trace
	if id, ok := t.tuples[ap]; ok {
		return id
	}
	if t.tuples == nil {
		t.tuples = make(map[netip.AddrPort]string)
	}
	id := strconv.Itoa(t.tuplesNext)
	t.tuplesNext++
	t.tuples[ap] = id
	t.record(qlog.TupleAssigned{TupleID: id, Local: tupleEndpoint(c.t.Conn.LocalAddr()), Remote: tupleEndpointAP(ap)})
	return id
}

// traceServerSwitch records that a server follows its peer to ap.
func (c *Conn) traceServerSwitch(ap netip.AddrPort) {
	delete(c.trace.tuples, ap)
	c.trace.record(qlog.TupleAssigned{Local: tupleEndpoint(c.t.Conn.LocalAddr()), Remote: tupleEndpointAP(ap)})
}
