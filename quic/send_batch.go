package quic

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/udpio"
)

// sendState is what one run of the event loop builds and sends. Guarded
// by Conn.mu, except spare, which run alone touches.
type sendState struct {
	// pending are the datagrams built, which run writes once it let go
	// of mu; spare is the slice they go into next time, so steady
	// sending allocates nothing.
	pending []outDatagram
	spare   []outDatagram
	// maxDatagram is the datagram size in use (path MTU discovery).
	maxDatagram int
	// The datagram being built: pad it to its limit; handshakeOnly, it
	// may elicit in the Initial and Handshake spaces only; ecn is its
	// mark, ecnTest says it is one of the ECN testing period's.
	pad           bool
	handshakeOnly bool
	ecn           protocol.ECN
	ecnTest       bool
	// pingPending: a PING is due (keep-alive); pacingDeadline is when
	// the pacer lets the next datagram go.
	pingPending    bool
	pacingDeadline time.Time
	ackScratch     []byte // where ACK frames are built, reused
}

// writeDatagrams sends the datagrams one run of the event loop built, in
// one sendmmsg call where the socket allows (internal/udpio), else one
// WriteTo each. Transient send errors count as packet loss; it returns the
// first other error on the connection's own path (see fatalSendError),
// after which the connection cannot go on. Called by run only.
func (c *Conn) writeDatagrams(writes []outDatagram, sendT *Transport) error {
	if len(writes) == 0 {
		return nil
	}
	defer func() {
		for _, d := range writes {
			if d.pooled {
				putSendBuffer(d.b)
			}
		}
	}()
	ap, ok := addrPort(c.path.remote)
	local := c.x.local // a server's address on the path (local_address.go)
	if (len(writes) == 1 && writes[0].ecn == protocol.ECNNotECT && !local.IsValid()) || !ok || anyElsewhere(writes) {
		return c.writeEach(writes, sendT, local)
	}
	b := sendT.getSendBatch()
	defer sendT.sendBatches.Put(b)
	if b.w == nil {
		return c.writeEach(writes, sendT, local)
	}
	msgs := b.msgs[:0]
	if sendT.gso {
		msgs = b.gsoMessages(msgs, writes, ap)
	} else {
		for _, d := range writes {
			msgs = append(msgs, udpio.Message{Buf: d.b, Addr: ap, ECN: d.ecn})
		}
	}
	for i := range msgs {
		msgs[i].Local = local
	}
	var fatal error
	for rest := msgs; len(rest) > 0; {
		n, err := b.w.WriteBatch(rest)
		if err == nil || isClosedErr(err) {
			break
		}
		if n >= len(rest) {
			if fatalSendError(err) {
				fatal = err
			}
			break
		}
		if c.fatalWrite(err, len(rest[n].Buf)) {
			fatal = err
			break
		}
		rest = rest[n+1:] // drop the datagram that failed, as a loss
	}
	clear(msgs)
	b.msgs = msgs[:0]
	return fatal
}

// writeEach sends the datagrams one WriteTo each, or one message each from
// our address on the path when there is one (local is a server's on the
// current path, outDatagram.from on another); it returns what
// writeDatagrams does.
func (c *Conn) writeEach(writes []outDatagram, sendT *Transport, local netip.Addr) error {
	for _, d := range writes {
		to, via, from := d.to, d.via, d.from
		if to == nil {
			to, from = c.path.remote, local
		}
		if via == nil {
			via = sendT
		}
		var err error
		if from.IsValid() {
			err = via.writeFrom(d.b, to, from, d.ecn)
		} else {
			err = via.write(d.b, to)
		}
		// A failure elsewhere (a probe of another path, an answer to a
		// probing address) says nothing of the path in use.
		if d.to == nil && d.via == nil && c.fatalWrite(err, len(d.b)) {
			return err
		}
	}
	return nil
}

// writeFrom sends one datagram to to from our address from (a server on a
// socket bound to the unspecified address, local_address.go); a socket
// without batched writes gets a plain write, the kernel choosing the
// source.
func (t *Transport) writeFrom(d []byte, to net.Addr, from netip.Addr, ecn protocol.ECN) error {
	ap, ok := addrPort(to)
	b := t.getSendBatch()
	defer t.sendBatches.Put(b)
	if !ok || b.w == nil {
		return t.write(d, to)
	}
	msgs := append(b.msgs[:0], udpio.Message{Buf: d, Addr: ap, Local: from, ECN: ecn})
	_, err := b.w.WriteBatch(msgs)
	clear(msgs)
	b.msgs = msgs[:0]
	return err
}

// fatalSendError reports whether a send error means the path is unusable,
// as when the socket or its interface went away, rather than one lost
// datagram: too large for the interface (a path MTU probe), a full socket
// buffer, a refusal reported by an earlier ICMP message. A closed socket
// is left to the Transport, whose read loop closes it and so every
// connection on it with ErrTransportClosed.
func fatalSendError(err error) bool {
	switch {
	case err == nil, isClosedErr(err),
		errors.Is(err, syscall.EMSGSIZE), errors.Is(err, syscall.ENOBUFS),
		errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ECONNREFUSED):
		return false
	}
	return true
}

// fatalWrite reports whether the error of writing a datagram of size
// bytes on the connection's path ends the connection: fatalSendError, or
// a datagram no larger than Config.InitialPacketSize, the size the path
// must carry, that is too large for it (quic-go fails the same way).
func (c *Conn) fatalWrite(err error, size int) bool {
	return fatalSendError(err) || (size <= c.baseDatagram && errors.Is(err, syscall.EMSGSIZE))
}

// sendError is the close error of a connection whose socket failed to send
// (fatalSendError); it matches the socket's error and net.ErrClosed.
type sendError struct{ err error }

func (e *sendError) Error() string   { return "quic: sending failed: " + e.err.Error() }
func (e *sendError) Unwrap() []error { return []error{e.err, net.ErrClosed} }

// sendBatch is what one batched write needs: the socket's batching writer,
// its messages and the GSO buffer. A Transport pools them, so a
// connection holds none between writes and an idle one costs nothing here.
type sendBatch struct {
	w      *udpio.Writer // nil: the socket takes no batches
	msgs   []udpio.Message
	gsoBuf []byte
}

// getSendBatch takes a sendBatch from the Transport's pool; put it back
// into t.sendBatches after the write.
func (t *Transport) getSendBatch() *sendBatch {
	if b, ok := t.sendBatches.Get().(*sendBatch); ok {
		return b
	}
	return &sendBatch{w: t.newWriter()}
}

// gsoMessages groups runs of equal-size datagrams (the last of a run may be
// shorter) into one UDP GSO buffer each, copied into b.gsoBuf.
func (b *sendBatch) gsoMessages(msgs []udpio.Message, writes []outDatagram, ap netip.AddrPort) []udpio.Message {
	total := 0
	for _, d := range writes {
		total += len(d.b)
	}
	if cap(b.gsoBuf) < total {
		b.gsoBuf = make([]byte, 0, total)
	}
	buf := b.gsoBuf[:0]
	for i := 0; i < len(writes); {
		size := len(writes[i].b)
		j := i + 1
		for j < len(writes) && j-i < maxGSOSegments {
			l := len(writes[j].b)
			if l > size || writes[j].ecn != writes[i].ecn {
				break // one GSO buffer has one size and one ECN mark
			}
			j++
			if l < size {
				break // a shorter datagram ends the run
			}
		}
		if j-i == 1 {
			msgs = append(msgs, udpio.Message{Buf: writes[i].b, Addr: ap, ECN: writes[i].ecn})
			i = j
			continue
		}
		start := len(buf)
		for _, d := range writes[i:j] {
			buf = append(buf, d.b...)
		}
		msgs = append(msgs, udpio.Message{Buf: buf[start:], Addr: ap, SegmentSize: size, ECN: writes[i].ecn})
		i = j
	}
	return msgs
}

// maxGSOSegments bounds a GSO buffer to udpio's limit and 64 KiB.
const maxGSOSegments = min(udpio.MaxGSOSegments, 65000/sendBufferSize)

// newWriter returns a batching writer for the Transport's socket, or nil
// when it is not a *net.UDPConn (wrappers, tests) or the platform refuses.
func (t *Transport) newWriter() *udpio.Writer {
	uc, ok := t.Conn.(*net.UDPConn)
	if !ok {
		return nil
	}
	w, err := udpio.NewWriter(uc, udpio.WriterConfig{Batch: maxDatagramsPerRun, GSO: t.gso})
	if err != nil {
		return nil
	}
	return w
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ua.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
}

func isClosedErr(err error) bool { return errors.Is(err, net.ErrClosed) }

// anyElsewhere reports whether a datagram goes to an address other than
// the peer's current one (a PATH_RESPONSE to a probe) or leaves from
// another socket (a client's PATH_CHALLENGE on a new path): rare enough to
// send that batch one datagram at a time.
func anyElsewhere(writes []outDatagram) bool {
	for _, d := range writes {
		if d.to != nil || d.via != nil {
			return true
		}
	}
	return false
}
