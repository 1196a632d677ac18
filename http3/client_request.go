package http3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// roundTrip sends one request on a new stream and reads the response
// header, skipping interim (1xx) responses. The request is already
// counted in cc's active requests (getConn); roundTrip ends it when it
// fails, the response body when it is done.
func (cc *clientConn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	early := earlyDataSafe(req)
	if m, ok := map0RTTMethod(req.Method); ok {
		r := *req
		r.Method, req, early = m, &r, true
	}
	if !early {
		if err := cc.awaitHandshake(ctx); err != nil {
			cc.requestDone()
			return nil, err
		}
	}
	str, err := cc.qc.OpenStreamSync(ctx)
	if err != nil {
		cc.requestDone()
		if ctx.Err() == nil && cc.isGoingAway() {
			return nil, errConnGoingAway // closed after GOAWAY before we opened a stream
		}
		return nil, fromQUICError(err)
	}
	if !cc.awaitResponse(str) {
		resetStream(str, ErrCodeRequestCanceled)
		cc.requestDone()
		return nil, errConnGoingAway
	}
	stop := context.AfterFunc(ctx, func() { resetStream(str, ErrCodeRequestCanceled) })
	rsp, b, br, err := cc.sendAndRead(str, req)
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
	rsp.Body = &responseBody{bodyReader: b, br: br, str: str, stop: stop, cc: cc, reqCtxErr: ctx.Err}
	return rsp, nil
}

// sendAndRead writes the request header, starts the body writer and
// reads the response header. It returns the reader of the response
// content, from which the caller makes the Body, and the pooled buffered
// reader under it, which the Body returns to readerPool when done.
func (cc *clientConn) sendAndRead(str *quic.Stream, req *http.Request) (*http.Response, *bodyReader, *bufio.Reader, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	enc := encoderPool.Get().(*fieldEncoder)
	if trace != nil && trace.WroteHeaderField != nil {
		enc.onField = func(name, value string) { trace.WroteHeaderField(name, []string{value}) }
	}
	section, err := enc.encodeRequest(nil, req, cc.peerFieldLimit())
	enc.onField = nil
	encoderPool.Put(enc)
	if err == nil {
		_, err = str.Write(headersFrame{FieldSection: section}.append(nil))
		err = fromQUICError(err)
	}
	if err != nil {
		traceWroteRequest(trace, err)
		resetStream(str, ErrCodeRequestCanceled)
		return nil, nil, nil, err
	}
	traceWroteHeaders(trace)
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody {
		go func() { traceWroteRequest(trace, writeRequestBody(str, req, cc.peerFieldLimit())) }()
	} else {
		err := fromQUICError(str.Close())
		traceWroteRequest(trace, err)
		if err != nil {
			return nil, nil, nil, err
		}
	}

	br := getReader(str)
	fr := newFrameReader(br, cc.maxHeader)
	check := &requestStreamChecker{isClient: true}
	interim := 0
	for first := true; ; first = false {
		fh, err := fr.next()
		if first && err == nil {
			traceGotFirstResponseByte(trace)
		}
		if err == io.EOF {
			err = check.onEnd()
		}
		if err == nil {
			err = check.checkFrameType(fh.Type)
		}
		if err == nil && fh.Type == frameTypePushPromise {
			err = newError(ErrCodeIDError, "PUSH_PROMISE without MAX_PUSH_ID")
		}
		var rsp *http.Response
		if err == nil {
			hb := getHeaderBuf()
			if err = hb.read(fr); err == nil {
				rsp, err = decodeResponse(hb.b, cc.maxHeader)
			}
			hb.release()
		}
		if err != nil {
			err = fromQUICError(err)
			cc.streamFailed(str, err)
			putReader(br)
			return nil, nil, nil, err
		}
		if code := rsp.StatusCode; isInterimStatus(code) && code != http.StatusSwitchingProtocols {
			// An interim response: the final one follows. 101 ends the
			// exchange as in net/http (golang.org/issue/26161) and
			// quic-go, although HTTP/3 has no upgrade (RFC 9114 4.5).
			if interim++; interim > maxInterimResponses {
				resetStream(str, ErrCodeExcessiveLoad)
				putReader(br)
				return nil, nil, nil, errTooManyInterim
			}
			if err := traceInterim(trace, code, rsp.Header); err != nil {
				resetStream(str, ErrCodeRequestCanceled)
				putReader(br)
				return nil, nil, nil, err
			}
			check.interimResponse()
			continue
		}
		rsp.Request = req
		cs := cc.qc.ConnectionState().TLS
		rsp.TLS = &cs
		cl := rsp.ContentLength
		if req.Method == http.MethodHead || !bodyAllowedForStatus(rsp.StatusCode) {
			// No content may follow, whatever the header says about the
			// resource (RFC 9114 4.1.2).
			cl = 0
			if rsp.ContentLength < 0 && req.Method != http.MethodHead {
				rsp.ContentLength = 0 // as net/http's HTTP/2 and quic-go
			}
		}
		b := &bodyReader{fr: fr, check: check, maxHeader: cc.maxHeader, contentLength: cl}
		b.onTrailers = func(t http.Header) { applyTrailers(&rsp.Trailer, t) }
		b.onError = func(err error) { cc.streamFailed(str, err) }
		return rsp, b, br, nil
	}
}

// streamFailed handles an error on a request stream, as on the server.
func (cc *clientConn) streamFailed(str *quic.Stream, err error) {
	var e *Error
	switch {
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
// error that ended the request (httptrace's WroteRequest).
func writeRequestBody(str *quic.Stream, req *http.Request, limit uint64) error {
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
		section, err := enc.encodeTrailers(nil, req.Trailer, limit)
		encoderPool.Put(enc)
		if err != nil {
			str.CancelWrite(quic.StreamErrorCode(ErrCodeRequestCanceled))
			return err
		}
		if _, err := str.Write(headersFrame{FieldSection: section}.append(nil)); err != nil {
			return fromQUICError(err)
		}
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
	stop      func() bool // stops the request context's watch
	cc        *clientConn
	reqCtxErr func() error
	once      sync.Once
}

// errResponseBodyClosed is returned by Read after Close.
var errResponseBodyClosed = errors.New("http3: read on closed response body")

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.bodyReader.Read(p)
	if err != nil {
		if ctxErr := b.ctxErr(err); ctxErr != nil {
			err = ctxErr
		}
		b.finish()
	}
	return n, err
}

// ctxErr returns the request context's error when the stream failed
// because that context ended.
func (b *responseBody) ctxErr(err error) error {
	if err == io.EOF {
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
		b.stop()
		b.cc.requestDone()
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
func (cc *clientConn) awaitHandshake(ctx context.Context) error {
	select {
	case <-cc.qc.HandshakeComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-cc.qc.Context().Done():
		return fromQUICError(context.Cause(cc.qc.Context()))
	}
}
