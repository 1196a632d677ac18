package http3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// roundTrip sends one request on a new stream and reads the response
// header, skipping interim (1xx) responses. The request is already
// counted in cc's active requests (getConn, RoundTrip); roundTrip ends it
// when it fails, the response body when it is done.
func (cc *ClientConn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	early := earlyDataSafe(req)
	if m, ok := map0RTTMethod(req.Method); ok {
		r := *req
		r.Method, req, early = m, &r, true
	}
	if !early {
		if err := cc.awaitHandshake(ctx); err != nil {
			cc.requestDone()
			if ctx.Err() == nil {
				return nil, &connUnusableError{err} // never sent
			}
			return nil, err
		}
	}
	if req.Method == http.MethodConnect && isExtendedConnect(req) {
		// RFC 9220 section 3 (RFC 8441 section 3): :protocol only once
		// the server's SETTINGS enabled it.
		if err := cc.checkExtendedConnect(ctx); err != nil {
			cc.requestDone()
			return nil, err
		}
	}
	str, err := cc.qc.OpenStreamSync(ctx)
	if err != nil {
		cc.requestDone()
		if ctx.Err() == nil && (cc.isGoingAway() || cc.qc.Context().Err() != nil) {
			// Closed (after GOAWAY, or an idle timeout) before we opened
			// a stream: the request was never sent, a new connection
			// takes it.
			return nil, &connUnusableError{fromQUICError(err)}
		}
		return nil, fromQUICError(err)
	}
	if !cc.awaitResponse(str) {
		resetStream(str, ErrCodeRequestCanceled)
		cc.requestDone()
		return nil, errConnGoingAway
	}
	stop := context.AfterFunc(ctx, func() { resetStream(str, ErrCodeRequestCanceled) })
	rs := cc.newRequestStream(str, httptrace.ContextClientTrace(ctx))
	rs.stop, rs.reqCtxErr, rs.onBodyDone = stop, ctx.Err, cc.requestDone
	rsp, err := rs.sendAndRead(req)
	cc.responseArrived(str)
	if err != nil {
		stop()
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case cc.excludedByGoAway(str.StreamID()):
			err = &notProcessedError{err}
		}
		cc.requestDone()
		return nil, err
	}
	return rsp, nil
}

// checkExtendedConnect waits for the server's SETTINGS and fails unless
// they enable extended CONNECT.
func (cc *ClientConn) checkExtendedConnect(ctx context.Context) error {
	if err := cc.peer.waitSettings(ctx); err != nil {
		return err
	}
	if !cc.peer.Settings().EnableExtendedConnect {
		return errors.New("http3: server didn't enable Extended CONNECT")
	}
	return nil
}

// A RequestStream is a client request stream used directly, in
// quic-go's shape: SendRequestHeader sends the request header, Write and
// Close the request content (as DATA frames), ReadResponse reads the
// response header and Read its content. Sending and receiving are
// decoupled, so the application can use the stream (and send HTTP
// Datagrams) before the response arrives: what WebTransport and the
// MASQUE protocols need. Errors from resets and a closed connection are
// *Error.
type RequestStream struct {
	cc    *ClientConn
	str   *quic.Stream
	s     Stream // Write, Read (once the response arrived) and datagrams
	trace *httptrace.ClientTrace

	br    *bufio.Reader // nil once released
	fr    *frameReader
	check requestStreamChecker
	body  bodyReader // of the final response; here to save an allocation
	err   error      // sticky error of the response header

	sentHeader    bool
	isHead        bool
	isConnect     bool
	requestedGzip bool
	gotFirstByte  bool

	// Set by Transport.RoundTrip: the request context's watch, its
	// error, and the end of the request for the connection's count.
	stop       func() bool
	reqCtxErr  func() error
	onBodyDone func()
}

func (cc *ClientConn) newRequestStream(str *quic.Stream, trace *httptrace.ClientTrace) *RequestStream {
	rs := &RequestStream{cc: cc, str: str, trace: trace}
	rs.s = Stream{str: str, peer: cc.peer}
	rs.br = getReader(str)
	rs.fr = newFrameReader(rs.br, cc.maxHeader)
	rs.fr.qlog, rs.fr.qlogID = cc.qlog, str.StreamID()
	rs.check.isClient = true
	return rs
}

// OpenRequestStream opens a new request stream, waiting for stream
// credit until ctx ends. It fails on a connection that received GOAWAY
// (RFC 9114 section 5.2). The stream counts as a request in progress
// until both its directions ended.
func (cc *ClientConn) OpenRequestStream(ctx context.Context) (*RequestStream, error) {
	if !cc.startRequest() {
		return nil, errConnGoingAway
	}
	str, err := cc.qc.OpenStreamSync(ctx)
	if err != nil {
		cc.requestDone()
		return nil, fromQUICError(err)
	}
	if !cc.awaitResponse(str) {
		resetStream(str, ErrCodeRequestCanceled)
		cc.requestDone()
		return nil, errConnGoingAway
	}
	rs := cc.newRequestStream(str, httptrace.ContextClientTrace(ctx))
	rs.s.ends = &streamEnds{dg: cc.peer.trackDatagrams(str)}
	rs.s.ends.takeOver(str, cc.qc, func() {
		cc.peer.untrackDatagrams(str, rs.s.ends.dg)
		cc.responseArrived(str)
		cc.requestDone()
	})
	return rs, nil
}

// SendRequestHeader sends the request's header section. The request must
// have no body: its content, if any, is written with Write and ended
// with Close. An extended CONNECT (Method CONNECT, Proto naming the
// protocol, RFC 9220) waits for the server's SETTINGS, until the
// request's context ends, and fails unless they enable it. It may be
// called once.
func (s *RequestStream) SendRequestHeader(req *http.Request) error {
	if req.Body != nil && req.Body != http.NoBody {
		return errors.New("http3: invalid use of RequestStream.SendRequestHeader with a request that has a request body")
	}
	if s.sentHeader {
		return errors.New("http3: invalid duplicate use of RequestStream.SendRequestHeader")
	}
	if req.Method == http.MethodConnect && isExtendedConnect(req) {
		if err := s.cc.checkExtendedConnect(req.Context()); err != nil {
			return err
		}
	}
	return s.writeHeader(req)
}

// writeHeader encodes and sends the request header, noting what the
// response needs to know about the request.
func (s *RequestStream) writeHeader(req *http.Request) error {
	s.sentHeader = true
	s.isHead = req.Method == http.MethodHead
	s.isConnect = req.Method == http.MethodConnect
	s.requestedGzip = !s.cc.noGzip && !s.isHead && !s.isConnect &&
		req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
	enc := encoderPool.Get().(*fieldEncoder)
	if s.trace != nil && s.trace.WroteHeaderField != nil {
		enc.onField = func(name, value string) { s.trace.WroteHeaderField(name, []string{value}) }
	}
	enc.acceptGzip = s.requestedGzip
	enc.log.on = s.cc.qlog != nil
	section, err := enc.encodeRequest(nil, req)
	if err == nil {
		_, err = s.str.Write(headersFrame{FieldSection: section}.append(nil))
		err = fromQUICError(err)
	}
	if err == nil && s.cc.qlog != nil {
		s.cc.qlog.frameCreated(s.str.StreamID(), frameTypeHeaders, uint64(len(section)), enc.log.frame())
	}
	enc.onField, enc.acceptGzip, enc.log = nil, false, qlogFields{}
	encoderPool.Put(enc)
	if err != nil {
		traceWroteRequest(s.trace, err)
		resetStream(s.str, ErrCodeRequestCanceled)
		return err
	}
	traceWroteHeaders(s.trace)
	return nil
}

// sendAndRead sends req (header, then its body from another goroutine)
// and reads the final response, reporting interim ones to httptrace.
func (s *RequestStream) sendAndRead(req *http.Request) (*http.Response, error) {
	if err := s.writeHeader(req); err != nil {
		s.releaseReader()
		return nil, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		go func() { traceWroteRequest(s.trace, writeRequestBody(s.str, req, s.cc.qlog)) }()
	} else {
		err := fromQUICError(s.str.Close())
		traceWroteRequest(s.trace, err)
		if err != nil {
			s.releaseReader()
			return nil, err
		}
	}
	for interim := 0; ; {
		rsp, err := s.ReadResponse()
		if err != nil {
			return nil, err
		}
		code := rsp.StatusCode
		if !isInterimStatus(code) || code == http.StatusSwitchingProtocols {
			rsp.Request = req
			cs := s.cc.qc.ConnectionState().TLS
			rsp.TLS = &cs
			return rsp, nil
		}
		// An interim response: the final one follows. 101 ends the
		// exchange as in net/http (golang.org/issue/26161) and
		// quic-go, although HTTP/3 has no upgrade (RFC 9114 4.5).
		if interim++; interim > maxInterimResponses {
			s.fail(errTooManyInterim, ErrCodeExcessiveLoad)
			return nil, errTooManyInterim
		}
		if err := traceInterim(s.trace, code, rsp.Header); err != nil {
			s.fail(err, ErrCodeRequestCanceled)
			return nil, err
		}
	}
}

// fail ends the exchange after a local decision: the stream is reset
// with code and err is sticky.
func (s *RequestStream) fail(err error, code ErrCode) {
	resetStream(s.str, code)
	s.err = err
	s.releaseReader()
	s.s.ends.end(true, err)
}

func (s *RequestStream) releaseReader() {
	if s.br != nil {
		putReader(s.br)
		s.br = nil
	}
}

// ReadResponse reads the next response header section. An interim (1xx)
// response is returned as it is (with an empty body), and ReadResponse
// may then be called again for the next; after the final response, Read
// (or the response's Body) reads its content. A gzip response to a
// request that asked for it is decoded (see Transport.DisableCompression).
// It does not set Response.Request or Response.TLS.
func (s *RequestStream) ReadResponse() (*http.Response, error) {
	if !s.sentHeader {
		return nil, errors.New("http3: invalid use of RequestStream.ReadResponse before SendRequestHeader")
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.s.body != nil {
		return nil, errors.New("http3: invalid use of RequestStream.ReadResponse after the final response")
	}
	rsp, err := s.readHeader()
	if err != nil {
		err = fromQUICError(err)
		s.cc.streamFailed(s.str, err)
		s.err = err
		s.releaseReader()
		s.s.ends.end(true, err)
		return nil, err
	}
	if isInterimStatus(rsp.StatusCode) && rsp.StatusCode != http.StatusSwitchingProtocols {
		s.check.interimResponse()
		rsp.Body = http.NoBody
		return rsp, nil
	}
	s.cc.responseArrived(s.str)
	tunnel := s.isConnect && rsp.StatusCode/100 == 2 // RFC 9110 9.3.6: the content is the tunnel
	cl := rsp.ContentLength
	if !tunnel && (s.isHead || !bodyAllowedForStatus(rsp.StatusCode)) {
		// No content may follow, whatever the header says about the
		// resource (RFC 9114 4.1.2).
		cl = 0
		if rsp.ContentLength < 0 && !s.isHead {
			rsp.ContentLength = 0 // as net/http's HTTP/2 and quic-go
		}
	}
	cc, str := s.cc, s.str
	s.body = bodyReader{fr: s.fr, check: &s.check, maxHeader: cc.maxHeader, contentLength: cl}
	b := &responseBody{
		bodyReader: &s.body,
		br:         s.br, str: str, stop: s.stop, reqCtxErr: s.reqCtxErr, onDone: s.onBodyDone,
	}
	s.br = nil // the body releases it
	b.onTrailers = func(t http.Header) { applyTrailers(&rsp.Trailer, t) }
	b.onError = func(err error) { cc.streamFailed(str, err) }
	if s.s.ends != nil {
		b.watchEnd(s.s.ends)
	}
	rsp.Body = b
	if s.requestedGzip && !tunnel && strings.EqualFold(rsp.Header.Get("Content-Encoding"), "gzip") {
		rsp.Header.Del("Content-Encoding")
		rsp.Header.Del("Content-Length")
		rsp.ContentLength = -1
		rsp.Uncompressed = true
		rsp.Body = &gzipBody{body: b}
	}
	s.s.body = rsp.Body
	return rsp, nil
}

// readHeader reads the HEADERS frame of the next response and decodes it.
func (s *RequestStream) readHeader() (*http.Response, error) {
	fh, err := s.fr.next()
	if !s.gotFirstByte && err == nil {
		s.gotFirstByte = true
		traceGotFirstResponseByte(s.trace)
	}
	if err == io.EOF {
		err = s.check.onEnd()
	}
	if err == nil {
		err = s.check.checkFrameType(fh.Type)
	}
	if err == nil && fh.Type == frameTypePushPromise {
		err = newError(ErrCodeIDError, "PUSH_PROMISE without MAX_PUSH_ID")
	}
	if err != nil {
		return nil, err
	}
	hb := getHeaderBuf()
	defer hb.release()
	if err := hb.read(s.fr); err != nil {
		return nil, err
	}
	q := s.fr.headerLog()
	rsp, err := decodeResponseLogged(hb.b, s.cc.maxHeader, q)
	s.fr.logHeaders(q)
	return rsp, err
}

// Read reads the content of the final response (DATA payloads); it is
// valid once ReadResponse returned it.
func (s *RequestStream) Read(p []byte) (int, error) {
	if s.s.body == nil {
		return 0, errors.New("http3: invalid use of RequestStream.Read before ReadResponse")
	}
	return s.s.Read(p)
}

// Write sends p as a DATA frame of the request's content; valid after
// SendRequestHeader.
func (s *RequestStream) Write(p []byte) (int, error) {
	if !s.sentHeader {
		return 0, errors.New("http3: invalid use of RequestStream.Write before SendRequestHeader")
	}
	return s.s.Write(p)
}

// TryWriteAll sends p as one DATA frame of the request's content if all
// of it can be queued at once, else nothing (quic.ErrWouldBlock); valid
// after SendRequestHeader (see Stream.TryWriteAll).
func (s *RequestStream) TryWriteAll(p []byte) error {
	if !s.sentHeader {
		return errors.New("http3: invalid use of RequestStream.TryWriteAll before SendRequestHeader")
	}
	return s.s.TryWriteAll(p)
}

// Close closes the send side of the stream (the request is complete);
// the response can still be read.
func (s *RequestStream) Close() error { return s.s.Close() }

// CancelRead stops receiving the response (STOP_SENDING with code); the
// request's content written before or after, and its FIN, still go out.
func (s *RequestStream) CancelRead(code quic.StreamErrorCode) { s.s.CancelRead(code) }

// CancelWrite resets the send side with code.
func (s *RequestStream) CancelWrite(code quic.StreamErrorCode) { s.s.CancelWrite(code) }

// Context returns the QUIC stream's context, which ends with its send
// side or the connection.
func (s *RequestStream) Context() context.Context { return s.s.Context() }

// StreamID returns the QUIC stream ID.
func (s *RequestStream) StreamID() quic.StreamID { return s.s.StreamID() }

// QlogTrace returns the qlog trace of the QUIC connection (see
// Stream.QlogTrace).
func (s *RequestStream) QlogTrace() qlogwriter.Trace { return s.s.QlogTrace() }

// SetDeadline sets the read and write deadlines.
func (s *RequestStream) SetDeadline(t time.Time) error { return s.s.SetDeadline(t) }

// SetReadDeadline sets the deadline for Read and ReadResponse.
func (s *RequestStream) SetReadDeadline(t time.Time) error { return s.s.SetReadDeadline(t) }

// SetWriteDeadline sets the deadline for Write.
func (s *RequestStream) SetWriteDeadline(t time.Time) error { return s.s.SetWriteDeadline(t) }

// SendDatagram sends an HTTP Datagram (RFC 9297) tied to this request;
// the Transport and the server must both enable HTTP Datagrams. It may be
// sent before the response arrives (the server drops what it cannot yet
// tie to a request).
func (s *RequestStream) SendDatagram(b []byte) error { return s.s.SendDatagram(b) }

// ReceiveDatagram returns the next HTTP Datagram for this request,
// waiting for one (see Stream.ReceiveDatagram).
func (s *RequestStream) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	return s.s.ReceiveDatagram(ctx)
}

// streamFailed handles an error reading a request stream, as on the
// server; after the application's own CancelRead (RequestStream.CancelRead,
// or Body.Close during a Read) only the receive side ends.
func (cc *ClientConn) streamFailed(str *quic.Stream, err error) {
	var e *Error
	switch {
	case isOwnCancelRead(err):
	case isConnectionError(err):
		cc.closeWithError(err)
	case errors.As(err, &e) && !e.Remote:
		resetStream(str, e.ErrorCode)
	default:
		resetStream(str, ErrCodeRequestCanceled)
	}
}

// maxInterimResponses bounds the interim (1xx) responses before the
// final one, as net/http does (5).
const maxInterimResponses = 5

var errTooManyInterim = errors.New("http3: too many 1xx informational responses")

// traceInterim reports an interim response to httptrace; an error from
// Got1xxResponse aborts the request, as in net/http.
func traceInterim(trace *httptrace.ClientTrace, code int, h http.Header) error {
	if trace == nil {
		return nil
	}
	if trace.Got1xxResponse != nil {
		if err := trace.Got1xxResponse(code, textproto.MIMEHeader(h)); err != nil {
			return err
		}
	}
	if code == http.StatusContinue && trace.Got100Continue != nil {
		trace.Got100Continue()
	}
	return nil
}

// writeRequestBody streams the request body as DATA frames, then the
// trailers, then closes the stream. A failing body cancels the stream:
// the server must not see a truncated body as complete. It returns the
// error that ended the request (httptrace's WroteRequest). log records
// the frames written.
func writeRequestBody(str *quic.Stream, req *http.Request, log *qlogProducer) error {
	defer req.Body.Close()
	const hdrRoom = 9 // type (1 byte) + length (up to 8 bytes)
	buf := bodyBufPool.Get().(*[]byte)
	defer bodyBufPool.Put(buf)
	b := *buf
	for {
		n, err := req.Body.Read(b[hdrRoom:])
		if n > 0 {
			hdr := dataFrame{Length: uint64(n)}.append(b[:0:hdrRoom])
			start := hdrRoom - len(hdr)
			copy(b[start:], hdr)
			if _, werr := str.Write(b[start : hdrRoom+n]); werr != nil {
				return fromQUICError(werr) // the server stopped reading; the response says why
			}
			if log != nil {
				log.frameCreated(str.StreamID(), frameTypeData, uint64(n), qlog.DataFrame{})
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			str.CancelWrite(quic.StreamErrorCode(ErrCodeRequestCanceled))
			return err
		}
	}
	if len(req.Trailer) > 0 {
		enc := encoderPool.Get().(*fieldEncoder)
		enc.log.on = log != nil
		section, err := enc.encodeTrailers(nil, req.Trailer)
		fields := enc.log.frame()
		enc.log = qlogFields{}
		encoderPool.Put(enc)
		if err != nil {
			str.CancelWrite(quic.StreamErrorCode(ErrCodeRequestCanceled))
			return err
		}
		if _, err := str.Write(headersFrame{FieldSection: section}.append(nil)); err != nil {
			return fromQUICError(err)
		}
		log.frameCreated(str.StreamID(), frameTypeHeaders, uint64(len(section)), fields)
	}
	return fromQUICError(str.Close())
}

var bodyBufPool = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// responseBody is the Body of a client response.
type responseBody struct {
	*bodyReader
	br        *bufio.Reader // under bodyReader; back to readerPool in finish
	str       *quic.Stream
	stop      func() bool  // stops the request context's watch; nil: none
	reqCtxErr func() error // the request context's error; nil: none
	onDone    func()       // the request ended, for the connection's count; nil: none
	once      sync.Once
}

// errResponseBodyClosed is returned by Read after Close.
var errResponseBodyClosed = errors.New("http3: read on closed response body")

func (b *responseBody) Read(p []byte) (int, error) {
	var n int
	var err error
	if b.reqCtxErr != nil && !b.readToEnd() && b.reqCtxErr() != nil {
		// The request was canceled: no more of it, not even what is
		// buffered (as net/http and quic-go).
		b.closeWith(errResponseBodyClosed)
		err = errResponseBodyClosed
	} else {
		n, err = b.bodyReader.Read(p)
	}
	if err != nil {
		if ctxErr := b.ctxErr(err); ctxErr != nil {
			// We reset the stream for the request's context: an *Error
			// with H3_REQUEST_CANCELLED (quic-go's) that also matches the
			// context's error (net/http's).
			err = &Error{ErrorCode: ErrCodeRequestCanceled, ErrorMessage: ctxErr.Error(), err: ctxErr}
		}
		b.finish()
	}
	return n, err
}

// ctxErr returns the request context's error when the stream failed
// because that context ended.
func (b *responseBody) ctxErr(err error) error {
	if err == io.EOF || b.reqCtxErr == nil {
		return nil
	}
	return b.reqCtxErr()
}

// Close abandons the rest of the response: the server is asked to stop
// sending with H3_REQUEST_CANCELLED.
func (b *responseBody) Close() error {
	if !b.readToEnd() {
		b.str.CancelRead(quic.StreamErrorCode(ErrCodeRequestCanceled))
	}
	b.closeWith(errResponseBodyClosed)
	b.finish()
	return nil
}

// finish runs once the body ended, failed or was closed. The body's
// error is sticky by then, so no Read touches the buffered reader again
// and it can be reused.
func (b *responseBody) finish() {
	b.once.Do(func() {
		if b.stop != nil {
			b.stop()
		}
		if b.onDone != nil {
			b.onDone()
		}
		putReader(b.br)
		b.br = nil
	})
}

// earlyDataSafe reports whether req may be sent in 0-RTT, where an attacker
// can replay it: only safe methods without a body (RFC 8470 section 2).
func earlyDataSafe(req *http.Request) bool {
	return (req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == "") &&
		(req.Body == nil || req.Body == http.NoBody)
}

// map0RTTMethod maps MethodGet0RTT and MethodHead0RTT to the method
// they send.
func map0RTTMethod(m string) (string, bool) {
	switch m {
	case MethodGet0RTT:
		return http.MethodGet, true
	case MethodHead0RTT:
		return http.MethodHead, true
	}
	return m, false
}

// awaitHandshake blocks until the connection's handshake completed, so the
// request is not sent as replayable 0-RTT data.
func (cc *ClientConn) awaitHandshake(ctx context.Context) error {
	select {
	case <-cc.qc.HandshakeComplete():
		return nil
	default:
	}
	select {
	case <-cc.qc.HandshakeComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-cc.qc.Context().Done():
		return fromQUICError(context.Cause(cc.qc.Context()))
	}
}
