package proxy

import (
	"errors"
	"io"
	"sync/atomic"
)

// errBodyTooLarge ends a request body past Config.MaxBodyBytes.
var errBodyTooLarge = errors.New("proxy: request body too large")

// requestBody is the client's request body as the upstream transport
// reads it: counted against the limit, watched for the first read (after
// which the request can no longer go to another upstream), and, at its
// end, the source of the outbound trailers. The transport may read it
// from its own goroutine, hence the atomics.
type requestBody struct {
	rc       io.ReadCloser
	limit    int64 // 0: none
	n        int64
	touched  atomic.Bool
	tooLarge atomic.Bool
	ex       *exchange
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.touched.Store(true)
	if b.tooLarge.Load() {
		return 0, errBodyTooLarge
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.limit > 0 && b.n > b.limit {
		b.tooLarge.Store(true)
		return 0, errBodyTooLarge
	}
	if err == io.EOF && b.ex.trailer != nil {
		// The server has filled the request's Trailer by now (the
		// values of announced names, and any unannounced ones).
		for k, vv := range b.ex.in.Trailer {
			if vv != nil {
				b.ex.trailer[k] = vv
			}
		}
	}
	return n, err
}

func (b *requestBody) Close() error { return b.rc.Close() }

// responseBody is an upstream's response body: it ends the in-flight
// count when closed and records a failure midway.
type responseBody struct {
	rc      io.ReadCloser
	ex      *exchange
	u       *upstream
	release func(error) // ends the request's own context (MaxConnsPerUpstream); nil without
	closed  bool
}

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.ex.kind == "" {
		b.ex.kind = kindAborted
		if b.ex.in.Context().Err() != nil {
			b.ex.kind = kindCanceled
		}
		b.u.m.errors.WithLabelValues(b.ex.kind).Inc()
	}
	return n, err
}

func (b *responseBody) Close() error {
	if !b.closed {
		b.closed = true
		b.u.m.inFlight.Dec()
		err := b.rc.Close()
		if b.release != nil {
			b.release(nil)
		}
		return err
	}
	return b.rc.Close()
}
