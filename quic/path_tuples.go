package quic

import (
	"net"
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
func (ps *pathState) pathOn(isClient bool, t *Transport) *Path {
	if !isClient || t == nil || t == ps.sendT {
		return nil
	}
	for _, p := range ps.extra {
		if p.t == t && !p.closed {
			return p
		}
	}
	return nil
}

// tupleOfTransport is the tuple ID of a client's path by its Transport.
func (ps *pathState) tupleOfTransport(t *Transport) string {
	if t == nil || t == ps.sendT {
		return ""
	}
	for _, p := range ps.extra {
		if p.t == t {
			return p.tupleID
		}
	}
	return "0" // the connection's first Transport, after a Switch
}

// prevTupleID is the ID of the client path in use (before a Switch).
func (ps *pathState) prevTupleID() string {
	for _, p := range ps.extra {
		if p.t == ps.sendT {
			return p.tupleID
		}
	}
	return "0"
}

// setRxTuple sets the tuple of the datagram being processed; local is the
// connection's first Transport (a server's peer addresses are its tuples).
func (t *connTracer) setRxTuple(ps *pathState, isClient bool, local *Transport) {
	if isClient {
		t.rxTuple = ps.tupleOfTransport(ps.rx.via)
		return
	}
	t.rxTuple = ""
	if ps.rx.other {
		t.rxTuple = t.serverTuple(ps.rx.from, local)
	}
}

// pathTuple announces a client path before its first datagram and makes
// it the tuple of the datagram being built.
func (t *connTracer) pathTuple(p *Path, remote net.Addr) {
	if !p.tupleLogged {
		p.tupleLogged = true
		t.record(qlog.TupleAssigned{TupleID: p.tupleID, Local: tupleEndpoint(p.t.Conn.LocalAddr()), Remote: tupleEndpoint(remote)})
	}
	t.txTuple = p.tupleID
}

// switchTo records a client's Switch to p: the path left gets its own ID,
// and "" is p's from now on.
func (t *connTracer) switchTo(p *Path, ps *pathState) {
	t.record(qlog.TupleAssigned{TupleID: ps.prevTupleID(), Local: tupleEndpoint(ps.sendT.Conn.LocalAddr()), Remote: tupleEndpoint(ps.remote)})
	t.record(qlog.TupleAssigned{Local: tupleEndpoint(p.t.Conn.LocalAddr()), Remote: tupleEndpoint(ps.remote)})
}

// serverTuple returns the tuple ID of peer address ap on a server whose
// Transport is local, announcing it the first time.
func (t *connTracer) serverTuple(ap netip.AddrPort, local *Transport) string {
	if id, ok := t.tuples[ap]; ok {
		return id
	}
	if t.tuples == nil {
		t.tuples = make(map[netip.AddrPort]string)
	}
	id := strconv.Itoa(t.tuplesNext)
	t.tuplesNext++
	t.tuples[ap] = id
	t.record(qlog.TupleAssigned{TupleID: id, Local: tupleEndpoint(local.Conn.LocalAddr()), Remote: tupleEndpointAP(ap)})
	return id
}

// serverSwitch records that a server (on Transport local) follows its peer
// to ap.
func (t *connTracer) serverSwitch(ap netip.AddrPort, local *Transport) {
	delete(t.tuples, ap)
	t.record(qlog.TupleAssigned{Local: tupleEndpoint(local.Conn.LocalAddr()), Remote: tupleEndpointAP(ap)})
}
