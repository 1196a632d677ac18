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

// handleRequest serves one request stream (RFC 9114 section 4.1).
func (sc *serverConn) handleRequest(str *quic.Stream) {
	br := getReader(str)
	defer putReader(br)
	fr := newFrameReader(br, sc.maxHeader)
	check := &requestStreamChecker{}
	timeout := sc.s.readHeaderTimeout()
	if timeout > 0 {
		_ = str.SetReadDeadline(time.Now().Add(timeout))
	}
	req, err := readRequestHeader(fr, check, sc.maxHeader)
	if timeout > 0 {
		_ = str.SetReadDeadline(time.Time{}) // the body has no deadline
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The client opened the stream but did not finish its header
		// section in time: the request is incomplete (RFC 9114 4.1).
		err = wrapError(ErrCodeRequestIncomplete, err, "no complete header section within %v", timeout)
	}
	if err != nil {
		if errorCode(err) == ErrCodeExcessiveLoad {
			sc.rejectLargeHeader(str)
			return
		}
		sc.streamFailed(str, err)
		return
	}
	ctx, cancel := context.WithCancel(sc.ctx)
	defer cancel()
	stop := context.AfterFunc(str.Context(), cancel) // STOP_SENDING or connection close
	defer stop()

	body := &requestBody{bodyReader: bodyReader{
		fr:            fr,
		check:         check,
		isRequest:     true,
		maxHeader:     sc.maxHeader,
		contentLength: req.ContentLength,
	}, str: str}
	body.onTrailers = func(t http.Header) {
		if req.Trailer == nil {
			req.Trailer = make(http.Header, len(t))
		}
		for k, v := range t {
			req.Trailer[k] = v
		}
	}
	body.onError = func(err error) {
		if e, ok := err.(*Error); ok && !e.Remote {
			sc.streamFailed(str, err)
		}
		cancel()
	}
	if req.ContentLength < 0 {
		req.ContentLength = -1
	}
	req.Body = body
	req.RemoteAddr = sc.qc.RemoteAddr().String()
	cs := sc.qc.ConnectionState().TLS
	req.TLS = &cs
	req = req.WithContext(ctx)

	w := newResponseWriter(sc, str, req.Method == http.MethodHead)
	defer w.release()
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		body.onFirstRead = w.sendContinue
	}
	if !sc.runHandler(w, req) {
		resetStream(str, ErrCodeInternalError)
		return
	}
	if err := w.finish(); err != nil {
		resetStream(str, ErrCodeInternalError)
		return
	}
	if !body.done() {
		// Section 4.1: the response is complete without the rest of
		// the request; ask the client to stop sending it.
		str.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	}
}

// readRequestHeader reads the HEADERS frame that starts a request stream
// and decodes the request; maxHeader is our
// SETTINGS_MAX_FIELD_SECTION_SIZE.
func readRequestHeader(fr *frameReader, check *requestStreamChecker, maxHeader uint64) (*http.Request, error) {
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
	payload, err := fr.readPayload(nil)
	if err != nil {
		return nil, fromQUICError(err)
	}
	return decodeRequest(payload, maxHeader, false)
}

// runHandler calls the handler and reports whether it returned normally.
// A panic is logged (except http.ErrAbortHandler) and contained, as
// net/http does.
func (sc *serverConn) runHandler(w *responseWriter, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler { //nolint:errorlint // net/http compares the same way
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
	w := newResponseWriter(sc, str, false)
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

// Close stops reading the request: the client is asked to stop sending
// with H3_NO_ERROR (section 4.1), since the response does not need it.
func (b *requestBody) Close() error {
	if !b.done() {
		b.str.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	}
	b.closeWith(errBodyClosed)
	return nil
}
