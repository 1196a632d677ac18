package http3

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// bodyReader streams the content of a request or response: the payload
// of its DATA frames, read straight from the stream without buffering the
// whole body (RFC 9114 section 4.1). It checks the frame sequence, the
// declared content-length (section 4.1.2) and decodes a trailer section.
type bodyReader struct {
	fr        *frameReader
	check     *requestStreamChecker
	isRequest bool
	maxHeader uint64 // our SETTINGS_MAX_FIELD_SECTION_SIZE, for trailers

	contentLength int64 // -1 when not declared
	received      int64
	inData        bool

	// readSection, when set, reads the payload of a trailer section of
	// the given length (the server's header budget).
	readSection func(n uint64) (*headerBuf, error)
	// onTrailers receives a decoded trailer section.
	onTrailers func(http.Header)
	// onError is called once with the first error, so the owner can reset
	// the stream or close the connection on local errors.
	onError func(error)

	mu    sync.Mutex  // Read may race with Close from another goroutine
	err   error       // sticky: io.EOF after a complete body
	atEOF atomic.Bool // the whole body was read; readable without waiting for a blocked Read
	// ends, when set, learns when the body ended (its stream's receive
	// side): HTTP Datagrams and streams the application took over.
	ends atomic.Pointer[streamEnds]
}

// setErr makes err the body's final error (b.mu held).
func (b *bodyReader) setErr(err error) {
	b.err = err
	if e := b.ends.Load(); e != nil {
		e.end(true, err)
	}
}

// watchEnd makes e learn when the body ends, at once when it has.
func (b *bodyReader) watchEnd(e *streamEnds) {
	b.ends.Store(e)
	b.mu.Lock()
	err := b.err
	b.mu.Unlock()
	if err != nil {
		e.end(true, err)
	}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	for {
		if b.inData {
			n, err := b.fr.Read(p)
			b.received += int64(n)
			if b.contentLength >= 0 && b.received > b.contentLength {
				return n, b.fail(malformed("body longer than its content-length of %d", b.contentLength))
			}
			if err == io.EOF {
				b.inData = false
				if n > 0 {
					return n, nil
				}
				continue
			}
			if err != nil {
				return n, b.fail(fromQUICError(err))
			}
			return n, nil
		}
		fh, err := b.fr.next()
		if err == io.EOF {
			if b.contentLength >= 0 && b.received != b.contentLength {
				// Malformed (RFC 9114 4.1.2), but the peer's side is
				// over: nothing to reset, and a server may still answer
				// (as net/http's HTTP/2 and quic-go let the handler).
				b.setErr(wrapError(ErrCodeMessageError, io.ErrUnexpectedEOF,
					"body of %d bytes, content-length says %d", b.received, b.contentLength))
				return 0, b.err
			}
			b.atEOF.Store(true)
			b.setErr(io.EOF)
			return 0, io.EOF
		}
		if err != nil {
			return 0, b.fail(fromQUICError(err))
		}
		if err := b.check.checkFrameType(fh.Type); err != nil {
			return 0, b.fail(err)
		}
		switch fh.Type {
		case frameTypeData:
			b.inData = fh.Length > 0
		case frameTypeHeaders:
			trailers, err := b.readTrailers(fh.Length)
			if err != nil {
				return 0, b.fail(err)
			}
			if b.onTrailers != nil {
				b.onTrailers(trailers)
			}
		default: // PUSH_PROMISE: we never send MAX_PUSH_ID, so no push ID is valid
			return 0, b.fail(newError(ErrCodeIDError, "PUSH_PROMISE without MAX_PUSH_ID"))
		}
	}
}

// readTrailers reads and decodes a trailer section of length n.
func (b *bodyReader) readTrailers(n uint64) (http.Header, error) {
	var hb *headerBuf
	var err error
	if b.readSection != nil {
		hb, err = b.readSection(n)
	} else {
		hb = getHeaderBuf()
		if err = hb.read(b.fr); err != nil {
			hb.release()
		}
	}
	if err != nil {
		return nil, err
	}
	defer hb.release()
	q := b.fr.headerLog()
	t, err := decodeTrailersLogged(hb.b, b.maxHeader, b.isRequest, q)
	b.fr.logHeaders(q)
	return t, err
}

// fail records err as the body's final error and reports local errors.
func (b *bodyReader) fail(err error) error {
	b.setErr(err)
	if b.onError != nil {
		b.onError(err)
	}
	return err
}

// readToEnd reports whether the body was read to its end. Otherwise,
// once its owner is done with it (it failed, was closed or was never
// read), the peer must be asked to stop sending it (STOP_SENDING), or
// what it keeps sending holds the stream's and the connection's flow
// control credit.
func (b *bodyReader) readToEnd() bool { return b.atEOF.Load() }

// closeWith makes later Reads fail with err, unless the body already ended.
// It reports whether the body was still unfinished.
func (b *bodyReader) closeWith(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return false
	}
	b.setErr(err)
	return true
}
