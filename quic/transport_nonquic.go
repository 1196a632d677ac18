package quic

import (
	"context"
	"net"
	"sync"
)

// Non-QUIC traffic on a Transport's socket (quic-go's WriteTo and
// ReadNonQUICPacket): datagrams whose first two bits are 0 (neither a long
// header nor a short header's fixed bit; stricter than RFC 9443) go to
// ReadNonQUICPacket once it was called, up to maxQueuedNonQUIC waiting;
// before that, and beyond, they are dropped (DropNonQUIC).
const maxQueuedNonQUIC = 32

type nonQUICQueue struct {
	once sync.Once
	ch   chan receivedPacket
	on   chan struct{} // closed once ReadNonQUICPacket was first called
}

func isNonQUIC(b []byte) bool { return len(b) > 0 && b[0]&0xc0 == 0 }

func (t *Transport) nonQUIC() *nonQUICQueue {
	q := &t.nonQUICQ
	q.once.Do(func() {
		q.ch = make(chan receivedPacket, maxQueuedNonQUIC)
		q.on = make(chan struct{})
	})
	return q
}

// handleNonQUIC queues a non-QUIC datagram for ReadNonQUICPacket.
func (t *Transport) handleNonQUIC(p receivedPacket) {
	q := t.nonQUIC()
	select {
	case <-q.on:
		select {
		case q.ch <- p:
			return
		default:
		}
	default:
	}
	t.countDropped(DropNonQUIC, len(p.data))
	putBuffer(p.buf)
}

// ReadNonQUICPacket returns the next datagram received on the socket that
// is not QUIC (its first two bits are 0), as quic-go does: it copies it
// into b and returns its length and sender. Such datagrams are kept only
// from the first call on, up to 32 waiting. It fails with ctx's error, or
// ErrTransportClosed once the Transport closed.
func (t *Transport) ReadNonQUICPacket(ctx context.Context, b []byte) (int, net.Addr, error) {
	if err := t.init(); err != nil {
		return 0, nil, err
	}
	q := t.nonQUIC()
	t.mu.Lock()
	select {
	case <-q.on:
	default:
		close(q.on)
	}
	t.mu.Unlock()
	select {
	case p := <-q.ch:
		n := copy(b, p.data)
		addr := p.remote
		if addr == nil {
			addr = net.UDPAddrFromAddrPort(p.addrPort)
		}
		putBuffer(p.buf)
		return n, addr, nil
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-t.closedCh:
		return 0, nil, t.closedErr()
	}
}

// WriteTo sends b to addr on the Transport's socket, as quic-go's
// Transport.WriteTo: for non-QUIC traffic sharing the socket.
func (t *Transport) WriteTo(b []byte, addr net.Addr) (int, error) {
	if err := t.init(); err != nil {
		return 0, err
	}
	if t.isClosed() {
		return 0, t.closedErr()
	}
	return t.writeTo(b, addr)
}
