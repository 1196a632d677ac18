package http3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/quic"
)

// bufferBeforeChunking is how much of a body the response writer holds
// back before sending the header, so that a small body gets a
// Content-Length; larger bodies are streamed as they are written.
const bufferBeforeChunking = 4 << 10

var (
	writerPool  = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 16<<10) }}
	encoderPool = sync.Pool{New: func() any { return newFieldEncoder() }}
)

// responseWriter is the http.ResponseWriter of a request stream. It
// supports http.Flusher, interim (1xx) responses, trailers (declared with
// the Trailer header or set with http.TrailerPrefix) and the deadline
// methods http.ResponseController looks for.
type responseWriter struct {
	// mu serialises the writes of the handler with the 100 (Continue)
	// that the request body sends on its first Read, possibly from
	// another goroutine.
	mu sync.Mutex

	sc  *serverConn
	str *quic.Stream
	sw  streamWriter // under bw: the stall and handler deadlines
	bw  *bufio.Writer
	enc *fieldEncoder
	// header is the handler's map. As in quic-go (not net/http), the
	// final response's HEADERS frame is built from it when it is sent,
	// at the first Write past the held-back buffer, Flush or the
	// handler's return, so fields set after WriteHeader and before then
	// are sent; trailers are read from it at the end.
	header    http.Header
	isHead    bool
	isConnect bool

	// body and ends are the request's, for HTTPStream; stream is set
	// once the handler took the stream over.
	body   *requestBody
	ends   *streamEnds
	stream *Stream

	status      int
	wroteHeader bool // the final status is chosen
	headersSent bool
	bodyAllowed bool
	declaredCL  int64 // -1 when the handler set no Content-Length
	written     int64
	buf         []byte // body held back until the header is sent
	trailers    []string
	scratch     []byte
}

// newResponseWriter returns the response writer of a request with
// method.
func newResponseWriter(sc *serverConn, str *quic.Stream, method string) *responseWriter {
	w := &responseWriter{
		sc: sc, str: str, bw: writerPool.Get().(*bufio.Writer), enc: encoderPool.Get().(*fieldEncoder),
		header: make(http.Header), isHead: method == http.MethodHead, isConnect: method == http.MethodConnect,
		declaredCL: -1,
	}
	w.enc.log.on = sc.qlog != nil
	w.sw = streamWriter{str: str, stall: sc.s.writeStallTimeout(), stats: &sc.s.stats, testHook: sc.s.testHookResponseWrite}
	w.bw.Reset(&w.sw)
	return w
}

// errResponseAfterHandler is what the writer's methods return once its
// handler returned: a goroutine the handler left behind (a ticker that
// flushes, say) gets an error, not another response's pooled buffers.
var errResponseAfterHandler = errors.New("http3: response written after its handler returned")

// release returns the pooled buffers; the methods the handler sees then
// fail with errResponseAfterHandler.
func (w *responseWriter) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bw != nil {
		w.bw.Reset(nil)
		writerPool.Put(w.bw)
		w.bw = nil
	}
	if w.enc != nil {
		w.enc.log = qlogFields{} // the pool keeps no header values
		encoderPool.Put(w.enc)
		w.enc = nil
	}
}

// Header returns the header map that WriteHeader sends.
func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader sends an interim response for 1xx codes other than 101 and
// otherwise chooses the final status. HTTP/3 has no upgrade (RFC 9114
// section 4.5), but as in quic-go a 101 is sent as a final response
// without content, which net/http's and quic-go's clients (and ours)
// return as the response.
func (w *responseWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stream != nil {
		panic("http3: WriteHeader called after HTTPStream") // as quic-go
	}
	if w.bw == nil {
		w.sc.log.Warn("http3: WriteHeader called after the handler returned", "code", code)
		return
	}
	w.writeHeader(code)
}

func (w *responseWriter) writeHeader(code int) {
	if w.wroteHeader {
		w.sc.log.Warn("http3: superfluous WriteHeader call", "code", code)
		return
	}
	if code < 100 || code > 599 {
		w.sc.log.Error("http3: invalid WriteHeader code", "code", code)
		code = http.StatusInternalServerError
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		if err := w.writeHeaders(code, w.header); err == nil {
			_ = w.bw.Flush()
		}
		return
	}
	w.status, w.wroteHeader = code, true
	w.bodyAllowed = bodyAllowedForStatus(code)
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.declaredCL = v
		} else {
			// As net/http and quic-go: not sent, the length is counted.
			w.sc.log.Error("http3: invalid Content-Length", "value", cl)
			w.header.Del("Content-Length")
		}
	}
}

func bodyAllowedForStatus(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// Write sends body bytes, holding back the first few so that a small body
// is sent with a Content-Length in one go.
func (w *responseWriter) Write(p []byte) (int, error) {
	return w.writeBody(p, 0)
}

// readFromSize is the buffer ReadFrom reads into: one DATA frame of up to
// writeChunk bytes, header included, goes to the stream in one Write.
const readFromSize = writeChunk

// readFromBuffers holds ReadFrom's buffers between responses.
var readFromBuffers = sync.Pool{New: func() any { return new([readFromSize]byte) }}

// Once a body passed largeBodyAfter bytes, ReadFrom reads largeReadSize
// bytes at a time (largeReadBuffers): a large file goes to the stream in
// a quarter of the Writes, each of which puts the handler to sleep until
// its data is nearly sent and costs a read of the file, and the stream
// holds more queued data, so that the connection's packer runs out of it
// less often (fuller batches per sendmmsg). Smaller bodies, the usual web
// response, keep the 64 KiB buffer.
const (
	largeBodyAfter = 1 << 20
	largeReadSize  = maxStreamWrite
)

var largeReadBuffers = sync.Pool{New: func() any { return new([largeReadSize]byte) }}

// headerRoom is the room ReadFrom leaves in front of its first read: enough
// for a usual response's HEADERS frame beside the DATA frame's header, so
// that both reach the stream in one Write with the start of the body (a
// separate Write would let the connection send the HEADERS frame in a
// small packet of its own: a datagram and a wakeup more per response).
const headerRoom = 512

// ReadFrom copies r's bytes into the body as Write would, reading into a
// buffer that leaves room in front for the DATA frame's header (and, the
// first time, the HEADERS frame): a frame goes to the stream in one Write,
// without passing through the buffered writer (http.FileServer's io.Copy
// comes here).
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	small := readFromBuffers.Get().(*[readFromSize]byte)
	var large *[largeReadSize]byte
	defer func() {
		if small != nil {
			readFromBuffers.Put(small)
		}
		if large != nil {
			largeReadBuffers.Put(large)
		}
	}()
	buf := small[:]
	var total int64
	room := headerRoom
	for {
		if large == nil && total >= largeBodyAfter {
			large = largeReadBuffers.Get().(*[largeReadSize]byte)
			buf = large[:]
			readFromBuffers.Put(small) // the stream copied what it held
			small = nil
		}
		n, rerr := r.Read(buf[room:])
		if n > 0 {
			k, err := w.writeBody(buf[:room+n], room)
			room = maxDataFrameHeader
			total += int64(k)
			if err != nil {
				return total, err
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// maxDataFrameHeader is the longest DATA frame header: a one-byte type and
// an eight-byte length.
const maxDataFrameHeader = 9

// sendSideErr is why the stream's send side is gone (STOP_SENDING, a
// reset, the connection closed), or nil: a Write fails then, not when the
// buffer fills. The connection is asked too: its context ends a moment
// before its streams' (they are its children, as is the request's, which
// can wake a handler in between).
func (w *responseWriter) sendSideErr() error {
	if err := context.Cause(w.str.Context()); err != nil {
		return err
	}
	return context.Cause(w.sc.qc.Context())
}

// writeBody is Write of frame[room:]; frame[:room] is spare room in front
// of the data where the DATA frame's header may be built.
func (w *responseWriter) writeBody(frame []byte, room int) (int, error) {
	p := frame[room:]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stream != nil {
		return 0, http.ErrHijacked
	}
	if w.bw == nil {
		return 0, errResponseAfterHandler
	}
	if err := w.sendSideErr(); err != nil {
		return 0, fromQUICError(err)
	}
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.bodyAllowed {
		return 0, http.ErrBodyNotAllowed
	}
	if w.declaredCL >= 0 && w.written+int64(len(p)) > w.declaredCL {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.isHead {
		return len(p), nil
	}
	if !w.headersSent {
		if len(w.buf)+len(p) <= bufferBeforeChunking {
			if w.buf == nil {
				w.buf = make([]byte, 0, bufferBeforeChunking)
			}
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		if len(w.buf) == 0 && w.bw.Buffered() == 0 && len(p) >= w.bw.Size() {
			sent, err := w.sendHeaderWithData(frame, room)
			if err != nil {
				return 0, err
			}
			if sent {
				return len(p), nil
			}
		} else if err := w.sendHeader(p); err != nil {
			return 0, err
		}
	}
	if room >= maxDataFrameHeader && len(w.buf) == 0 {
		if err := w.writeDataInPlace(frame, room); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if err := w.writeData(w.buf, p); err != nil {
		return 0, err
	}
	w.buf = w.buf[:0]
	return len(p), nil
}

// writeDataInPlace writes frame[room:] as one DATA frame whose header goes
// into the room in front of it, so that the frame reaches the stream in
// one Write, not copied into the buffered writer first (the stream copies
// it into its send buffer once). What the buffered writer holds (the
// HEADERS frame) is flushed before it.
func (w *responseWriter) writeDataInPlace(frame []byte, room int) error {
	n := len(frame) - room
	if n == 0 {
		return nil
	}
	if n < w.bw.Size() {
		// Small enough for the buffered writer: it may join what follows.
		return w.writeData(nil, frame[room:])
	}
	if err := w.bw.Flush(); err != nil {
		return fromQUICError(err)
	}
	w.scratch = dataFrame{Length: uint64(n)}.append(w.scratch[:0])
	start := room - len(w.scratch)
	copy(frame[start:], w.scratch)
	// With nothing buffered, a write at least the buffer's size goes
	// straight to the stream writer.
	if _, err := w.bw.Write(frame[start:]); err != nil {
		return fromQUICError(err)
	}
	if w.sc.qlog != nil {
		w.sc.qlog.frameCreated(w.str.StreamID(), frameTypeData, uint64(n), qlog.DataFrame{})
	}
	return nil
}

// sendHeaderWithData sends the final response header and frame[room:] as
// one DATA frame in a single stream Write, the two frames' headers and the
// field section built in the room in front of the data, and reports
// whether they fitted there. If not, the header alone is in the buffered
// writer, as sendHeader leaves it, and nothing of the data is sent.
func (w *responseWriter) sendHeaderWithData(frame []byte, room int) (bool, error) {
	section, err := w.encodeHeader(frame[room:])
	if err != nil {
		return false, err
	}
	n := len(frame) - room
	var headersHdr, dataHdr [16]byte
	hh := appendFrameHeader(headersHdr[:0], frameTypeHeaders, uint64(len(section)))
	dh := dataFrame{Length: uint64(n)}.append(dataHdr[:0])
	front := len(hh) + len(section) + len(dh)
	if front > room {
		return false, w.writeFieldSection(section)
	}
	start := room - front
	copy(frame[start:], hh)
	copy(frame[start+len(hh):], section)
	copy(frame[room-len(dh):], dh)
	if w.sc.qlog != nil {
		w.sc.qlog.frameCreated(w.str.StreamID(), frameTypeHeaders, uint64(len(section)), w.enc.log.frame())
		w.sc.qlog.frameCreated(w.str.StreamID(), frameTypeData, uint64(n), qlog.DataFrame{})
	}
	// Nothing is buffered and the frame is larger than the buffer: it
	// goes straight to the stream writer.
	if _, err := w.bw.Write(frame[start:]); err != nil {
		return true, fromQUICError(err)
	}
	return true, nil
}

// WriteString is Write without a conversion for io.WriteString callers.
func (w *responseWriter) WriteString(s string) (int, error) {
	return w.Write([]byte(s))
}

// sendContinue sends 100 (Continue) to a client that asked for it with
// Expect: 100-continue, unless the final response is already chosen.
func (w *responseWriter) sendContinue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wroteHeader || w.bw == nil || w.stream != nil {
		return
	}
	if err := w.writeHeaders(http.StatusContinue, nil); err == nil {
		_ = w.bw.Flush()
	}
}

// writeData writes a and b as one DATA frame.
func (w *responseWriter) writeData(a, b []byte) error {
	n := len(a) + len(b)
	if n == 0 {
		return nil
	}
	w.scratch = dataFrame{Length: uint64(n)}.append(w.scratch[:0])
	if _, err := w.bw.Write(w.scratch); err != nil {
		return fromQUICError(err)
	}
	if _, err := w.bw.Write(a); err != nil {
		return fromQUICError(err)
	}
	if _, err := w.bw.Write(b); err != nil {
		return fromQUICError(err)
	}
	if w.sc.qlog != nil {
		w.sc.qlog.frameCreated(w.str.StreamID(), frameTypeData, uint64(n), qlog.DataFrame{})
	}
	return nil
}

// writeHeaders writes one HEADERS frame with status and header, less
// the fields that are trailers.
func (w *responseWriter) writeHeaders(status int, header http.Header) error {
	section, err := w.encodeFields(status, header)
	if err != nil {
		return err
	}
	return w.writeFieldSection(section)
}

// encodeFields returns the field section of status and header, less the
// fields that are trailers, in w.scratch.
func (w *responseWriter) encodeFields(status int, header http.Header) ([]byte, error) {
	var err error
	w.scratch, err = w.enc.encodeResponse(w.scratch[:0], status, withoutTrailers(header, w.trailers))
	return w.scratch, err
}

func (w *responseWriter) writeFieldSection(section []byte) error {
	var hdr [16]byte
	if _, err := w.bw.Write(appendFrameHeader(hdr[:0], frameTypeHeaders, uint64(len(section)))); err != nil {
		return fromQUICError(err)
	}
	if _, err := w.bw.Write(section); err != nil {
		return fromQUICError(err)
	}
	if w.sc.qlog != nil {
		w.sc.qlog.frameCreated(w.str.StreamID(), frameTypeHeaders, uint64(len(section)), w.enc.log.frame())
	}
	return nil
}

// withoutTrailers returns h without the "Trailer:" keys and the declared
// trailer names, which are sent in the trailer section rather than as
// header fields, copying h only when needed.
func withoutTrailers(h http.Header, trailers []string) http.Header {
	var out http.Header
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || slices.Contains(trailers, k) {
			if out == nil {
				out = h.Clone()
			}
			delete(out, k)
		}
	}
	if out == nil {
		return h
	}
	return out
}

// sendHeader sends the final response header as the handler's map holds
// it now, adding Date and a Content-Type sniffed from the body's start
// (what is buffered, then next: the bytes about to follow it) unless a
// Content-Encoding is set, when the handler set none, as net/http and
// quic-go do.
func (w *responseWriter) sendHeader(next []byte) error {
	section, err := w.encodeHeader(next)
	if err != nil {
		return err
	}
	return w.writeFieldSection(section)
}

// sniffLen is how much of a body http.DetectContentType looks at.
const sniffLen = 512

// encodeHeader marks the header sent and returns its field section, as
// sendHeader describes, in w.scratch.
func (w *responseWriter) encodeHeader(next []byte) ([]byte, error) {
	w.headersSent = true
	h := w.header
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if _, ok := h["Content-Type"]; !ok && w.bodyAllowed && len(w.buf)+len(next) > 0 && h.Get("Content-Encoding") == "" {
		var start [sniffLen]byte
		n := copy(start[:], w.buf)
		n += copy(start[n:], next)
		h.Set("Content-Type", http.DetectContentType(start[:n]))
	}
	for _, v := range h["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				w.trailers = append(w.trailers, http.CanonicalHeaderKey(name))
			}
		}
	}
	return w.encodeFields(w.status, h)
}

// hasTrailers reports whether the handler declared or set trailers.
func (w *responseWriter) hasTrailers() bool {
	if len(w.header["Trailer"]) > 0 {
		return true
	}
	for k := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// FlushError sends the header and everything written so far.
func (w *responseWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stream != nil {
		return http.ErrHijacked
	}
	if w.bw == nil {
		return errResponseAfterHandler
	}
	return w.flush()
}

func (w *responseWriter) flush() error {
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.headersSent {
		if err := w.sendHeader(nil); err != nil {
			return err
		}
		if !w.isHead && w.bodyAllowed {
			if err := w.writeData(w.buf, nil); err != nil {
				return err
			}
		}
		w.buf = w.buf[:0]
	}
	return fromQUICError(w.bw.Flush())
}

// Flush implements http.Flusher.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// SetReadDeadline sets the deadline for reading the request body
// (http.ResponseController).
func (w *responseWriter) SetReadDeadline(t time.Time) error { return w.str.SetReadDeadline(t) }

// SetWriteDeadline sets the deadline for writing the response
// (http.ResponseController).
func (w *responseWriter) SetWriteDeadline(t time.Time) error { return w.sw.SetWriteDeadline(t) }

// EnableFullDuplex is a no-op: HTTP/3 request and response streams are
// always full duplex (http.ResponseController).
func (w *responseWriter) EnableFullDuplex() error { return nil }

// finish completes the response after the handler returned: header (with
// a Content-Length for a body held back whole), body, trailers, FIN.
func (w *responseWriter) finish() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.headersSent {
		// RFC 9110 section 9.3.6: no Content-Length in a 2xx answer to
		// CONNECT, whose content is the tunnel.
		tunnel := w.isConnect && w.status/100 == 2
		_, haveCL := w.header["Content-Length"]
		if w.bodyAllowed && !haveCL && !w.hasTrailers() && !tunnel {
			w.header.Set("Content-Length", strconv.FormatInt(w.written, 10))
		}
		if err := w.flush(); err != nil {
			return err
		}
	}
	// A body shorter than its Content-Length still ends with FIN, after
	// everything written: the header and data reach the client, which
	// must treat the mismatch as malformed (RFC 9114 4.1.2), as an
	// HTTP/1.1 client sees the close after a short body. A reset instead
	// would discard what is still unsent, the header included.
	if err := w.writeTrailers(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return fromQUICError(err)
	}
	return w.str.Close()
}

// writeTrailers sends the trailer section: the declared names with the
// values the handler set after writing, and the http.TrailerPrefix keys.
func (w *responseWriter) writeTrailers() error {
	var t http.Header
	add := func(k string, vv []string) {
		if len(vv) == 0 {
			return
		}
		if t == nil {
			t = make(http.Header)
		}
		t[k] = vv
	}
	for _, k := range w.trailers {
		add(k, w.header[k])
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			add(http.CanonicalHeaderKey(name), vv)
		}
	}
	if t == nil {
		return nil
	}
	var err error
	w.scratch, err = w.enc.encodeTrailers(w.scratch[:0], t)
	if err != nil {
		return err
	}
	return w.writeFieldSection(w.scratch)
}

// HTTPStream implements HTTPStreamer.
func (w *responseWriter) HTTPStream() (*Stream, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stream != nil {
		return w.stream, nil
	}
	if w.bw == nil {
		return nil, errResponseAfterHandler
	}
	if w.written > 0 {
		return nil, errors.New("http3: invalid use of HTTPStream after writing the response body")
	}
	noHead := !w.wroteHeader
	if !noHead {
		if err := w.flush(); err != nil {
			return nil, err
		}
	}
	// The stall limit was for the response writer; the stream's owner
	// sets its own deadlines (the handler's, if any, stays).
	w.sw.mu.Lock()
	_ = w.str.SetWriteDeadline(w.sw.user)
	w.sw.mu.Unlock()
	if w.ends == nil {
		w.ends = &streamEnds{}
		w.body.watchEnd(w.ends)
	}
	w.stream = &Stream{str: w.str, peer: w.sc.peer, body: w.body, ends: w.ends, noHead: noHead}
	return w.stream, nil
}

// takenOver reports whether the handler called HTTPStream.
func (w *responseWriter) takenOver() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream != nil
}

// ReceivedSettings implements Settingser: the client's SETTINGS.
func (w *responseWriter) ReceivedSettings() <-chan struct{} { return w.sc.peer.ReceivedSettings() }

// Settings implements Settingser.
func (w *responseWriter) Settings() *Settings { return w.sc.peer.Settings() }
