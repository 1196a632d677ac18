package http3

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// A Stream is an HTTP/3 request stream taken over by the application
// (quic-go's shape): what it writes goes out as DATA frames, and Read
// returns the payload of the DATA frames it receives. A handler gets one
// from HTTPStreamer; a client's RequestStream has the same methods. It is
// what WebTransport and MASQUE build on: an extended CONNECT stream
// carrying capsules, with HTTP Datagrams tied to it.
type Stream struct {
	str  *quic.Stream
	peer *peerState
	// body reads the DATA payloads: the request body (server) or the
	// response body (client), so reading either is the same.
	body   io.Reader
	ends   *streamEnds
	noHead bool // taken over before a response header was sent

	wmu       sync.Mutex
	frameHdr  [16]byte // the DATA frame header being written
	hdrOff    int      // its part already written
	hdrLen    int
	unwritten uint64 // payload bytes of that frame still to write
}

// HTTPStreamer lets an HTTP handler take over its request stream. The
// http.ResponseWriter our Server passes to handlers implements it.
//
// HTTPStream sends the response header when WriteHeader was called, and
// sends none otherwise (Write then fails); it fails if any of the body
// was written, and when the header cannot be sent (the stream is then not
// taken over). Afterwards WriteHeader panics and Write returns
// http.ErrHijacked; the handler may return while the stream lives on,
// and closing it is the caller's job. The request's context ends when
// the stream's send side does (or the connection closes), not when the
// handler returns.
type HTTPStreamer interface {
	HTTPStream() (*Stream, error)
}

// errNoResponseHeader is returned by Stream.Write on a stream taken over
// before any response header was sent: DATA before HEADERS is malformed.
var errNoResponseHeader = errors.New("http3: invalid use of Stream.Write before sending the response header")

// Read reads the payload of the DATA frames that arrive on the stream. A
// trailer section ends the data (its fields go to the request's or
// response's Trailer). Errors from resets or a closed connection are
// *Error.
func (s *Stream) Read(p []byte) (int, error) { return s.body.Read(p) }

// Write sends p as one DATA frame. A Write that fails part way (a
// deadline) leaves the frame open; the next Write completes it first.
func (s *Stream) Write(p []byte) (int, error) {
	if s.noHead {
		return 0, errNoResponseHeader
	}
	if len(p) == 0 {
		return 0, nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	if s.unwritten > 0 {
		m, err := s.continueFrame(p)
		n += m
		if err != nil || n == len(p) {
			return n, err
		}
	}
	s.hdrLen = len(dataFrame{Length: uint64(len(p) - n)}.append(s.frameHdr[:0]))
	s.hdrOff = 0
	s.unwritten = uint64(len(p) - n)
	s.logData(s.unwritten)
	m, err := s.continueFrame(p[n:])
	return n + m, err
}

// TryWriteAll sends p as one DATA frame if all of it can be queued at
// once (flow control and the stream's send buffer allow it); otherwise it
// queues nothing and returns an error matching quic.ErrWouldBlock. A
// frame left open by a failed Write is completed first, in the same
// all-or-nothing write. As Write, it fails on a stream taken over before
// a response header was sent.
func (s *Stream) TryWriteAll(p []byte) error {
	if s.noHead {
		return errNoResponseHeader
	}
	if len(p) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	k := min(uint64(len(p)), s.unwritten) // what the open frame still takes
	rest := p[k:]
	b := make([]byte, 0, s.hdrLen-s.hdrOff+int(k)+len(s.frameHdr)+len(rest))
	if k > 0 {
		b = append(b, s.frameHdr[s.hdrOff:s.hdrLen]...)
		b = append(b, p[:k]...)
	}
	if len(rest) > 0 {
		b = dataFrame{Length: uint64(len(rest))}.append(b)
		b = append(b, rest...)
	}
	if err := s.str.TryWriteAll(b); err != nil {
		return fromQUICError(err)
	}
	if k > 0 {
		s.hdrOff = s.hdrLen
		s.unwritten -= k
	}
	if len(rest) > 0 {
		s.logData(uint64(len(rest)))
	}
	return nil
}

// logData records a DATA frame of n bytes we started.
func (s *Stream) logData(n uint64) {
	if s.peer.qlog != nil {
		s.peer.qlog.frameCreated(s.str.StreamID(), frameTypeData, n, qlog.DataFrame{})
	}
}

// continueFrame writes what is left of the current frame's header, then
// as much of p as the frame still takes.
func (s *Stream) continueFrame(p []byte) (int, error) {
	if s.hdrOff < s.hdrLen {
		k, err := s.str.Write(s.frameHdr[s.hdrOff:s.hdrLen])
		s.hdrOff += k
		if err != nil {
			return 0, fromQUICError(err)
		}
	}
	m, err := s.str.Write(p[:min(uint64(len(p)), s.unwritten)])
	s.unwritten -= uint64(m)
	return m, fromQUICError(err)
}

// Close closes the send side of the stream (FIN); the receive side stays
// open.
func (s *Stream) Close() error { return fromQUICError(s.str.Close()) }

// CancelRead stops receiving: the peer is asked to stop sending
// (STOP_SENDING with code), and reads and ReceiveDatagram fail with a
// local *Error of that code. The send side is not touched: what was
// written and the FIN of a later Close still reach the peer.
func (s *Stream) CancelRead(code quic.StreamErrorCode) {
	s.str.CancelRead(code)
	s.ends.end(true, &Error{ErrorCode: ErrCode(code),
		err: &quic.StreamError{StreamID: s.str.StreamID(), ErrorCode: code}})
}

// CancelWrite resets the send side of the stream with code.
func (s *Stream) CancelWrite(code quic.StreamErrorCode) { s.str.CancelWrite(code) }

// StreamID returns the QUIC stream ID.
func (s *Stream) StreamID() quic.StreamID { return s.str.StreamID() }

// QlogTrace returns the qlog trace of the QUIC connection (nil without
// one), for an application that records events of its own there.
func (s *Stream) QlogTrace() qlogwriter.Trace { return s.peer.qc.QlogTrace() }

// QUICStream returns the QUIC stream under the HTTP/3 framing (quic-go's
// Stream has it too); writing to it directly bypasses the DATA framing.
func (s *Stream) QUICStream() *quic.Stream { return s.str }

// Context returns the QUIC stream's context, which ends with its send
// side (or the connection).
func (s *Stream) Context() context.Context { return s.str.Context() }

// SetDeadline sets the read and write deadlines.
func (s *Stream) SetDeadline(t time.Time) error { return s.str.SetDeadline(t) }

// SetReadDeadline sets the deadline for Read.
func (s *Stream) SetReadDeadline(t time.Time) error { return s.str.SetReadDeadline(t) }

// SetWriteDeadline sets the deadline for Write.
func (s *Stream) SetWriteDeadline(t time.Time) error { return s.str.SetWriteDeadline(t) }

// SendDatagram sends b as an HTTP Datagram (RFC 9297) tied to this
// stream. Both sides must have enabled HTTP Datagrams (Server and
// Transport EnableDatagrams); it fails once the stream's send side is
// done.
func (s *Stream) SendDatagram(b []byte) error { return s.peer.sendDatagram(s.str, b) }

// ReceiveDatagram returns the next HTTP Datagram that arrived for this
// stream, waiting for one. Once the stream's receive side ended (read to
// its end, reset, or CancelRead) it returns that error after the queued
// datagrams.
func (s *Stream) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	dg := s.ends.datagrams()
	if dg == nil {
		return nil, errDatagramsDisabled
	}
	return dg.receive(ctx)
}

// streamEnds tracks the two directions of a request stream: its HTTP
// Datagrams end with the receive side, and a stream the application took
// over counts as an active request until both ended.
type streamEnds struct {
	dg *streamDatagrams // nil: HTTP Datagrams are off

	mu         sync.Mutex
	send, recv bool
	onDone     func()
	stopConn   func() bool // ends the wait for the connection's close
}

// datagrams returns the stream's datagram state; nil-safe.
func (e *streamEnds) datagrams() *streamDatagrams {
	if e == nil {
		return nil
	}
	return e.dg
}

// end records that one direction ended; err is the receive side's final
// error. Nil-safe: a stream of Transport.RoundTrip has no ends.
func (e *streamEnds) end(recv bool, err error) {
	if e == nil {
		return
	}
	if recv && e.dg != nil {
		e.dg.endReceive(err)
	}
	e.mu.Lock()
	if recv {
		e.recv = true
	} else {
		e.send = true
	}
	var f func()
	var stop func() bool
	if e.send && e.recv {
		f, e.onDone = e.onDone, nil
		stop, e.stopConn = e.stopConn, nil
	}
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	if f != nil {
		f()
	}
}

// takeOver makes done run once both directions of str ended: the send
// side when its context ends (Close, CancelWrite, the peer's
// STOP_SENDING, the connection), the receive side through end or the
// connection's close. The two are watched apart: a send side that ended
// before the connection closed must not leave the receive side (and
// ReceiveDatagram) waiting for good, and neither may rely on which of the
// two contexts the closing connection ends first.
func (e *streamEnds) takeOver(str *quic.Stream, qc *quic.Conn, done func()) {
	e.mu.Lock()
	e.onDone = done
	e.stopConn = context.AfterFunc(qc.Context(), func() {
		e.end(true, fromQUICError(context.Cause(qc.Context())))
	})
	e.mu.Unlock()
	context.AfterFunc(str.Context(), func() { e.end(false, nil) })
}
