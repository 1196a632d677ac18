package quic

import (
	"errors"
	"net/netip"
	"time"
)

// ErrDatagramTooLarge is returned by InjectDatagram for a datagram larger
// than the Transport's receive buffers.
var ErrDatagramTooLarge = errors.New("quic: injected datagram larger than a receive buffer")

// InjectDatagram hands the Transport a UDP datagram that did not come
// through its socket, as if it had been read from it: the integrated
// offload mode's agent passes validated client Initials straight from its
// AF_XDP rings (no trip through the kernel stack). b is copied; the caller
// may reuse it when InjectDatagram returns. from is the client's address.
// The datagram gets exactly the treatment a socket read would: address
// validation still checks its token (the host never trusts the agent
// blindly).
func (t *Transport) InjectDatagram(b []byte, from netip.AddrPort) error {
	if err := t.init(); err != nil {
		return err
	}
	if t.isClosed() {
		return ErrTransportClosed
	}
	if len(b) == 0 {
		return nil
	}
	buf := getBuffer()
	if len(b) > len(*buf) {
		putBuffer(buf)
		return ErrDatagramTooLarge
	}
	n := copy(*buf, b)
	addr := netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	t.handleDatagram(receivedPacket{buf: buf, data: (*buf)[:n], addrPort: addr, rcvTime: time.Now()})
	return nil
}

// notifyConnectionID tells Transport.ConnectionIDAdded about a connection
// ID now routed to one of our connections.
func (t *Transport) notifyConnectionID(cid []byte) {
	if f := t.ConnectionIDAdded; f != nil && len(cid) > 0 {
		f(cid)
	}
}

// ConnectionIDs calls yield with every non-empty connection ID the
// Transport routes now, until yield returns false: an offload agent that
// lost its fast-path cache (a restarted split-mode agent) learns them
// again from it. The IDs are copied under the Transport's lock first, so
// yield may block; it must not keep cid.
func (t *Transport) ConnectionIDs(yield func(cid []byte) bool) {
	t.mu.Lock()
	ids := make([]byte, 0, len(t.handlers)*t.cidLen)
	for k := range t.handlers {
		// Only IDs we issued: a client's first Initial DCID, routed while
		// its Initials may arrive, has the client's length.
		if len(k) == t.cidLen {
			ids = append(ids, k...)
		}
	}
	lens := t.cidLen
	t.mu.Unlock()
	if lens == 0 {
		return
	}
	for len(ids) >= lens {
		if !yield(ids[:lens:lens]) {
			return
		}
		ids = ids[lens:]
	}
}
