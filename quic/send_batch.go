package quic

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/udpio"
)

// sendState is what one run of the event loop builds and sends. Guarded
// by Conn.mu, except spare and drainedSpare, which run alone touches.
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
	// appProbe is the 1-RTT PTO probe packet just built, whose stream
	// data the next probe may carry again (sendLocked); repeatProbe says
	// the next one does. Both are reset at the start of each run.
	appProbe    *sentPacket
	repeatProbe bool
	// arena is where sendLocked builds this run's datagrams, one after
	// the other; it goes with them to writeDatagrams, which gives it
	// back. nil outside sendLocked.
	arena *sendArena
	// drained are the wait channels of Writes whose data was packed
	// down to writeDrain in this run; run closes them once it released
	// mu (wakeWriters), so that the writer does not wake while the
	// rest of the run's packets are built and block on mu.
	// drainedSpare is the slice they go into next time; run alone
	// touches it, as spare.
	drained, drainedSpare []chan struct{}
}

// wakeDrained takes the channel a drained Write waits on (a stream's
// writeSig) for closing once mu is released, as broadcast would close it.
func (s *sendState) wakeDrained(sig *chan struct{}) {
	if *sig != nil {
		s.drained = append(s.drained, *sig)
		*sig = nil
	}
}

// takeDrained returns the channels wakeDrained took in this run, for
// wakeWriters; called with mu held.
func (s *sendState) takeDrained() []chan struct{} {
	d := s.drained
	s.drained, s.drainedSpare = s.drainedSpare, nil
	return d
}

// wakeWriters closes the channels takeDrained returned, without mu, and
// keeps the slice for a later run.
func (s *sendState) wakeWriters(d []chan struct{}) {
	if len(d) == 0 {
		return
	}
	for _, ch := range d {
		close(ch)
	}
	clear(d)
	s.drainedSpare = d[:0]
}

// sendArena holds the datagrams of one run of the event loop back to back:
// a run of equal-size datagrams is then already the buffer a UDP GSO send
// takes, and nothing is copied per datagram. A connection holds one only
// from building to writing.
type sendArena struct {
	buf  [sendArenaSize]byte
	used int // bytes taken by datagrams queued for sending
}

// sendArenaSize fits a full run of full-size datagrams.
const sendArenaSize = maxDatagramsPerRun * sendBufferSize

var sendArenaPool = sync.Pool{New: func() any { return new(sendArena) }}

// openArena gives sendLocked an arena to build in.
func (s *sendState) openArena() {
	if s.arena == nil {
		s.arena = sendArenaPool.Get().(*sendArena)
		s.arena.used = 0
	}
}

// closeArena ends sendLocked's use of the arena: the datagrams queued in
// it own it now, or it goes back to the pool when there are none.
func (s *sendState) closeArena() {
	if a := s.arena; a != nil && a.used == 0 {
		sendArenaPool.Put(a)
	}
	s.arena = nil
}

// datagramBuffer returns an empty buffer for the next datagram, with room
// for sendBufferSize bytes: the rest of the arena inside sendLocked, else
// one from the pool. Hand it back with releaseBuffer or queue the
// datagram built in it with queueDatagram.
func (s *sendState) datagramBuffer() []byte {
	if a := s.arena; a != nil && sendArenaSize-a.used >= sendBufferSize {
		return a.buf[a.used : a.used : a.used+sendBufferSize]
	}
	return getSendBuffer()
}

// inArena reports whether b starts where the arena's next datagram goes.
func (s *sendState) inArena(b []byte) bool {
	a := s.arena
	return a != nil && cap(b) > 0 && a.used < sendArenaSize && &b[:1][0] == &a.buf[a.used]
}

// releaseBuffer gives back a buffer of datagramBuffer that was not used.
func (s *sendState) releaseBuffer(b []byte) {
	if !s.inArena(b) {
		putSendBuffer(b)
	}
}

// queueDatagram queues d, built in a buffer of datagramBuffer, for this
// run's write.
func (s *sendState) queueDatagram(d []byte, ecn protocol.ECN) {
	if n := len(s.pending); n == cap(s.pending) && n >= 16 && n < maxDatagramsPerRun {
		// A full run's worth at once: a slice grown past
		// maxDatagramsPerRun is not kept for the next run (Conn.run),
		// while a connection that sends a few datagrams at a time keeps
		// a small one.
		s.pending = append(make([]outDatagram, 0, maxDatagramsPerRun), s.pending...)
	}
	if !s.inArena(d) {
		s.pending = append(s.pending, outDatagram{b: d, pooled: true, ecn: ecn})
		return
	}
	a := s.arena
	s.pending = append(s.pending, outDatagram{b: d, arena: a, arenaOff: int32(a.used), ecn: ecn})
	a.used += len(d)
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
		var arena *sendArena
		for _, d := range writes {
			if d.pooled {
				putSendBuffer(d.b)
			}
			// One arena's datagrams are queued one after the other.
			if d.arena != nil && d.arena != arena {
				arena = d.arena
				sendArenaPool.Put(arena)
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
// shorter) into one UDP GSO buffer each: the arena they were built in where
// they lie back to back there, else a copy in b.gsoBuf.
func (b *sendBatch) gsoMessages(msgs []udpio.Message, writes []outDatagram, ap netip.AddrPort) []udpio.Message {
	total := 0
	for _, d := range writes {
		if d.arena == nil {
			total += len(d.b)
		}
	}
	if total > 0 && cap(b.gsoBuf) < sendArenaSize {
		// A run may mix pooled and arena datagrams: room for a whole one.
		b.gsoBuf = make([]byte, 0, sendArenaSize)
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
		if inPlace := backToBack(writes[i:j]); inPlace != nil {
			msgs = append(msgs, udpio.Message{Buf: inPlace, Addr: ap, SegmentSize: size, ECN: writes[i].ecn})
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

// backToBack returns the datagrams as one slice of their arena when they
// lie there one right after the other, else nil.
func backToBack(writes []outDatagram) []byte {
	a := writes[0].arena
	if a == nil {
		return nil
	}
	start := int(writes[0].arenaOff)
	end := start
	for _, d := range writes {
		if d.arena != a || int(d.arenaOff) != end {
			return nil
		}
		end += len(d.b)
	}
	return a.buf[start:end:end]
}

// maxGSOSegments bounds a GSO buffer to udpio's limit and 64 KiB; a run of
// the event loop builds as many datagrams (maxDatagramsPerRun), so that a
// full run goes out as one GSO buffer in one sendmmsg call.
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
