package http3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// readerPool recycles the read buffers of request streams, on both sides.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// getReader returns a pooled buffered reader reading r.
func getReader(r io.Reader) *bufio.Reader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// putReader returns br to the pool; its owner must not use it again.
func putReader(br *bufio.Reader) {
	br.Reset(nil) // drop the stream
	readerPool.Put(br)
}

// handleRequest serves one request stream (RFC 9114 section 4.1) that
// admit counted, and ends it with requestDone: when the handler returns,
// or, for a stream the handler took over (HTTPStreamer), once both its
// directions ended.
func (sc *serverConn) handleRequest(str *quic.Stream) {
	var ends *streamEnds
	if dg := sc.peer.trackDatagrams(str); dg != nil {
		// From the start: datagrams may come right after the request.
		ends = &streamEnds{dg: dg}
	}
	br := getReader(str)
	fr := newFrameReader(br, sc.maxHeader)
	fr.qlog, fr.qlogID = sc.qlog, str.StreamID()
	check := &requestStreamChecker{}
	var deadline time.Time
	if timeout := sc.s.readHeaderTimeout(); timeout > 0 {
		deadline = time.Now().Add(timeout)
		_ = str.SetReadDeadline(deadline)
	}
	req, err := sc.readRequestHeader(fr, check, deadline, str.Context().Done())
	peeked := err == nil && req.ContentLength <= 0 && br.Buffered() == 0
	bodyless := peeked && endsAfterHeader(str)
	if peeked || !deadline.IsZero() {
		_ = str.SetReadDeadline(time.Time{}) // the body has no deadline
	}
	if err != nil {
		sc.refuseRequest(str, err)
		sc.peer.untrackDatagrams(str, ends.datagrams())
		putReader(br)
		sc.requestDone()
		return
	}
	sc.applyPriority(str, req.Header)
	ctx, cancel := context.WithCancel(sc.ctx)
	stop := context.AfterFunc(str.Context(), cancel) // STOP_SENDING or connection close

	body := &requestBody{bodyReader: bodyReader{
		fr:            fr,
		check:         check,
		isRequest:     true,
		maxHeader:     sc.maxHeader,
		contentLength: req.ContentLength,
	}, str: str}
	if ends != nil {
		body.watchEnd(ends)
	}
	body.readSection = func(n uint64) (*headerBuf, error) {
		return sc.readHeaderSection(fr, n, time.Time{}, ctx.Done())
	}
	body.onTrailers = func(t http.Header) { applyTrailers(&req.Trailer, t) }
	body.onError = func(err error) {
		if isOwnCancelRead(err) {
			// The handler stopped reading the request (Stream.CancelRead,
			// or Body.Close during a Read): STOP_SENDING is out, the
			// response and the request's context go on.
			return
		}
		if e, ok := err.(*Error); ok && !e.Remote {
			if !isConnectionError(err) {
				sc.s.stats.refuse(RefusedStreamError)
			}
			sc.streamFailed(str, err)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			// The request is gone; after the handler's own read
			// deadline it may still answer.
			cancel()
		}
	}
	if req.ContentLength < 0 {
		req.ContentLength = -1
	}
	req.Body = body
	if bodyless {
		// The HEADERS frame came with the stream's FIN: no body, so a
		// handler (or an http.Transport forwarding the request, whose
		// outgoing length is 0 for http.NoBody) need not probe one.
		// ContentLength stays as the fields say (-1 without
		// Content-Length), as quic-go's server leaves it: its own tests
		// check that an HTTP/3 request learns of no body only at EOF.
		// Reading the end now checks the stream and lets the response
		// finish without STOP_SENDING.
		_, _ = body.bodyReader.Read(nil)
		req.Body = http.NoBody
	}
	req.RemoteAddr = sc.qc.RemoteAddr().String()
	cs := sc.qc.ConnectionState().TLS
	req.TLS = &cs
	req = req.WithContext(ctx)

	w := newResponseWriter(sc, str, req.Method)
	w.body, w.ends = body, ends
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		body.onFirstRead = w.sendContinue
	}
	ok := sc.runHandler(w, req)
	if w.takenOver() {
		// The stream is the application's now (quic-go does the same
		// after a panic): the request lives until both its directions
		// ended. The buffered reader stays with the Stream.
		w.release()
		w.ends.takeOver(str, sc.qc, func() {
			sc.peer.untrackDatagrams(str, w.ends.datagrams())
			stop()
			cancel()
			sc.requestDone()
		})
		return
	}
	// The handler is done and its context ends with the cleanup below, so
	// the stream need not be watched any more. Stopped before finish
	// closes the send side (which ends str.Context()), the AfterFunc
	// does not fire: it would start a goroutine per request just to call
	// cancel.
	stop()
	defer func() {
		// Every path below has ended the receive side if the body was
		// not read to its end, so a Read still under way returns, and
		// retire waits for it before the reader and writer are reused.
		body.retire()
		w.release()
		sc.peer.untrackDatagrams(str, ends.datagrams())
		cancel()
		putReader(br)
		sc.requestDone()
	}()
	if !ok {
		resetStream(str, ErrCodeInternalError)
		return
	}
	if err := w.finish(); err != nil {
		// The response cannot be completed: a write failed (a deadline,
		// the client went away) or the body fell short of its
		// Content-Length. As quic-go, H3_REQUEST_CANCELLED.
		resetStream(str, ErrCodeRequestCanceled)
		return
	}
	if !body.readToEnd() {
		// Section 4.1: the response is complete without the rest of
		// the request; ask the client to stop sending it.
		str.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	}
}

// endsAfterHeader reports, without waiting, whether the request stream's
// receive side ended with what was read already (its FIN came with the
// HEADERS frame). It leaves the stream's read deadline in the past.
func endsAfterHeader(str *quic.Stream) bool {
	_ = str.SetReadDeadline(pastDeadline)
	var b [1]byte
	n, err := str.Peek(b[:])
	return n == 0 && err == io.EOF
}

// pastDeadline is a read deadline that has passed: a Peek under it returns
// at once.
var pastDeadline = time.Unix(1, 0)

// readRequestHeader reads the HEADERS frame that starts a request stream
// and decodes the request. The frame's declared length is reserved from
// the connection's header budget before its payload is read, waiting
// until deadline (zero: none) or done for it to fit, and released once
// decoded.
func (sc *serverConn) readRequestHeader(fr *frameReader, check *requestStreamChecker, deadline time.Time, done <-chan struct{}) (*http.Request, error) {
	fh, err := fr.next()
	if err == io.EOF {
		return nil, check.onEnd()
	}
	if err != nil {
		return nil, fromQUICError(err)
	}
	if err := check.checkFrameType(fh.Type); err != nil {
		return nil, err
	}
	hb, err := sc.readHeaderSection(fr, fh.Length, deadline, done)
	if err != nil {
		return nil, err
	}
	defer hb.release()
	q := fr.headerLog()
	req, err := decodeRequestLogged(hb.b, sc.maxHeader, true, q) // we send SETTINGS_ENABLE_CONNECT_PROTOCOL
	fr.logHeaders(q)
	return req, err
}

// applyPriority schedules the response stream by the request's Priority
// field (RFC 9218). A request without one keeps the QUIC default (urgency
// 3, incremental: responses share the connection round robin) until the
// client sent a Priority field on this connection; from then on such a
// request gets RFC 9218's defaults (urgency 3, not incremental), which a
// client that knows the scheme chose by leaving the field out.
func (sc *serverConn) applyPriority(str *quic.Stream, h http.Header) {
	v, ok := h["Priority"]
	if !ok {
		if sc.priorityAware.Load() {
			str.SetPriority(defaultUrgency, false)
		}
		return
	}
	sc.priorityAware.Store(true)
	str.SetPriority(parsePriority(v))
}

// errHeaderBudget is the cause of the H3_REQUEST_REJECTED of a request
// whose header section could not be admitted to the connection's header
// budget in time.
var errHeaderBudget = errors.New("http3: connection header budget exhausted")

// readHeaderSection reads the payload of the current HEADERS frame, of
// length n, within the connection's header budget (waiting until
// deadline or done). The caller releases the buffer.
func (sc *serverConn) readHeaderSection(fr *frameReader, n uint64, deadline time.Time, done <-chan struct{}) (*headerBuf, error) {
	if err := sc.headers.acquire(n, deadline, done); err != nil {
		return nil, wrapError(ErrCodeRequestRejected, errHeaderBudget,
			"the connection's header budget of %d bytes stayed full", sc.headers.limit)
	}
	defer sc.headers.release(n)
	hb := getHeaderBuf()
	if err := hb.read(fr); err != nil {
		hb.release()
		return nil, err
	}
	return hb, nil
}

// headerBuf is a pooled buffer that a header section is read into;
// decoding copies every name and value out, so it is released right
// after. Buffers that grew past maxPooledHeaderBuf are dropped, so the
// pool holds no large ones.
type headerBuf struct{ b []byte }

var headerBufPool = sync.Pool{New: func() any { return &headerBuf{b: make([]byte, 0, payloadChunk)} }}

const maxPooledHeaderBuf = 16 << 10

func getHeaderBuf() *headerBuf { return headerBufPool.Get().(*headerBuf) }

// read reads the current frame's payload into the buffer, keeping what
// it grew to.
func (h *headerBuf) read(fr *frameReader) error {
	var err error
	h.b, err = fr.readPayload(h.b[:0])
	return fromQUICError(err)
}

func (h *headerBuf) release() {
	if cap(h.b) > maxPooledHeaderBuf {
		return
	}
	h.b = h.b[:0]
	headerBufPool.Put(h)
}

// refuseRequest answers a request stream whose header section could not
// be read or decoded, and counts why.
func (sc *serverConn) refuseRequest(str *quic.Stream, err error) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The client opened the stream but did not finish its header
		// section in time: the request is incomplete (RFC 9114 4.1).
		sc.s.stats.refuse(RefusedHeaderTimeout)
		err = wrapError(ErrCodeRequestIncomplete, err, "no complete header section within %v", sc.s.readHeaderTimeout())
	case errors.Is(err, errHeaderBudget):
		sc.s.stats.refuse(RefusedHeaderBudget)
	case errorCode(err) == ErrCodeExcessiveLoad:
		sc.s.stats.refuse(RefusedHeaderTooLarge)
		sc.rejectLargeHeader(str)
		return
	default:
		var e *Error
		if errors.As(err, &e) && !e.Remote && !isConnectionError(err) {
			sc.s.stats.refuse(RefusedStreamError)
		}
	}
	sc.streamFailed(str, err)
}

// runHandler calls the handler and reports whether it returned normally.
// A panic is logged (except http.ErrAbortHandler) and contained, as
// net/http does.
func (sc *serverConn) runHandler(w *responseWriter, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler { //nolint:errorlint // net/http compares the same way
				sc.s.stats.handlerPanics.Add(1)
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				sc.log.Error("http3: panic serving request", "remote", req.RemoteAddr,
					"uri", req.RequestURI, "panic", p, "stack", string(buf))
			}
		}
	}()
	h := sc.s.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	h.ServeHTTP(w, req)
	return true
}

// rejectLargeHeader answers a request whose header section exceeds our
// limit with 431 (RFC 9114 section 4.2.2, RFC 6585 section 5) and stops
// reading the rest of the request.
func (sc *serverConn) rejectLargeHeader(str *quic.Stream) {
	str.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	w := newResponseWriter(sc, str, http.MethodGet)
	defer w.release()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
	_, _ = io.WriteString(w, "431 Request Header Fields Too Large\n")
	if err := w.finish(); err != nil {
		resetStream(str, ErrCodeInternalError)
	}
}

// streamFailed handles an error on a request stream: a connection error
// closes the connection, a stream error resets the stream with its code,
// anything else (the peer's reset, a closed connection) cancels it.
func (sc *serverConn) streamFailed(str *quic.Stream, err error) {
	var e *Error
	switch {
	case isConnectionError(err):
		sc.closeWithError(err)
	case errors.As(err, &e) && !e.Remote:
		sc.log.Debug("http3: resetting request stream", "remote", sc.qc.RemoteAddr(), "err", err)
		resetStream(str, e.ErrorCode)
	default:
		resetStream(str, ErrCodeRequestCanceled)
	}
}

// requestBody is the Body of a server request.
type requestBody struct {
	bodyReader
	str *quic.Stream
	// onFirstRead sends 100 (Continue) when the client expects it: the
	// handler reading the body is what it waits for (RFC 9110 10.1.1).
	onFirstRead func()
	once        sync.Once
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.onFirstRead != nil {
		b.once.Do(b.onFirstRead)
	}
	return b.bodyReader.Read(p)
}

// errBodyClosed is returned by Read after the handler closed the body.
var errBodyClosed = errors.New("http3: read on closed request body")

// errBodyAfterHandler is returned by Read after the handler returned.
var errBodyAfterHandler = errors.New("http3: read on request body after its handler returned")

// retire ends the body once its handler returned. A goroutine the handler
// left behind may still read it (an http.Transport forwarding the body
// upstream does, when the upstream answers before reading it all): a Read
// under way finishes first, later ones fail with errBodyAfterHandler, and
// no 100 (Continue) goes out any more, so the stream's buffered reader and
// the response writer can be reused by the next request.
func (b *requestBody) retire() {
	b.once.Do(func() {})
	b.closeWith(errBodyAfterHandler)
}

// Close stops reading the request: the client is asked to stop sending
// with H3_NO_ERROR (section 4.1), since the response does not need it.
func (b *requestBody) Close() error {
	if !b.readToEnd() {
		b.str.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	}
	b.closeWith(errBodyClosed)
	return nil
}
