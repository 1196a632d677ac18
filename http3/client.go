package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// Transport is an HTTP/3 client, an http.RoundTripper. It keeps one QUIC
// connection per authority (host:port) and sends concurrent requests on
// it as separate streams. A connection that received GOAWAY takes no new
// requests: the next request dials a new one.
//
// Connections are dialed with quic.DialAddrEarly: when the TLS config has a
// ClientSessionCache and the server allowed early data, requests may go out
// in 0-RTT. Only safe methods without a body do (RFC 8470, RFC 9114
// section 4.1.1: 0-RTT can be replayed); other requests wait until the
// handshake completes.
type Transport struct {
	// TLSClientConfig is cloned for every connection; NextProtos is set
	// to "h3" and ServerName defaults to the request's host.
	TLSClientConfig *tls.Config
	// QUICConfig configures the QUIC connections.
	QUICConfig *quic.Config
	// Dial, when set, replaces quic.DialAddrEarly.
	Dial func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error)
	// MaxResponseHeaderBytes bounds the decoded size of a response header
	// section (our SETTINGS_MAX_FIELD_SECTION_SIZE);
	// http.DefaultMaxHeaderBytes when 0 or negative.
	MaxResponseHeaderBytes int64
	// Logger receives protocol errors; nil means slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	conns   map[string]*clientConn
	dialing map[string]*dialCall
	closed  bool
}

var _ http.RoundTripper = (*Transport)(nil)

// dialCall is a dial in progress, shared by the requests that wait for it.
type dialCall struct {
	done chan struct{}
	cc   *clientConn
	err  error
}

// errTransportClosed is returned by RoundTrip after Close.
var errTransportClosed = errors.New("http3: transport closed")

func (t *Transport) logger() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.Default()
}

func (t *Transport) maxHeader() uint64 {
	if t.MaxResponseHeaderBytes <= 0 {
		return http.DefaultMaxHeaderBytes
	}
	return uint64(t.MaxResponseHeaderBytes)
}

// RoundTrip sends req on the connection for its authority, dialing one
// when there is none, and returns the response once its header arrived;
// the body is streamed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := t.roundTrip(req)
	if err != nil && req.Body != nil {
		req.Body.Close()
	}
	return rsp, err
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("http3: request has no URL")
	}
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("http3: unsupported scheme %q", req.URL.Scheme)
	}
	if req.URL.Host == "" {
		return nil, errors.New("http3: request has no host")
	}
	authority := authorityAddr(req.URL)
	for attempt := 0; ; attempt++ {
		cc, err := t.getConn(req.Context(), authority)
		if err != nil {
			return nil, err
		}
		rsp, err := cc.roundTrip(req)
		if attempt < 3 && (errors.Is(err, errConnGoingAway) || rejectedRetryable(err, req)) {
			continue // not processed by the server: a new connection takes it
		}
		return rsp, err
	}
}

// rejectedRetryable reports whether the server reset the request with
// H3_REQUEST_REJECTED, which promises it was not processed (RFC 9114
// section 4.1.1), and the request has no body that was already consumed.
func rejectedRetryable(err error, req *http.Request) bool {
	var e *Error
	return errors.As(err, &e) && e.Remote && e.ErrorCode == ErrCodeRequestRejected &&
		(req.Body == nil || req.Body == http.NoBody)
}

// authorityAddr returns the URL's host:port, with port 443 when it has
// none; an IPv6 literal keeps its brackets only once ("[::1]:443").
func authorityAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func (t *Transport) getConn(ctx context.Context, authority string) (*clientConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errTransportClosed
	}
	if cc := t.conns[authority]; cc != nil {
		t.mu.Unlock()
		return cc, nil
	}
	call := t.dialing[authority]
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		if t.dialing == nil {
			t.dialing = make(map[string]*dialCall)
		}
		t.dialing[authority] = call
		go t.dial(call, authority)
	}
	t.mu.Unlock()
	select {
	case <-call.done:
		return call.cc, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial connects to authority for the requests waiting on call. It does
// not use a request's context: one request giving up must not fail the
// others waiting for the same connection.
func (t *Transport) dial(call *dialCall, authority string) {
	qc, err := t.dialQUIC(authority)
	var cc *clientConn
	if err == nil {
		cc, err = newClientConn(t, qc, authority)
	}
	t.mu.Lock()
	delete(t.dialing, authority)
	switch {
	case err != nil:
	case t.closed:
		cc.close(ErrCodeNoError, "")
		cc, err = nil, errTransportClosed
	case cc.qc.Context().Err() != nil:
		// Already closed (an early dial returns before the handshake):
		// its forget ran before it was pooled, so do not pool it. A
		// close from now on waits for t.mu and then forgets it.
	default:
		if t.conns == nil {
			t.conns = make(map[string]*clientConn)
		}
		t.conns[authority] = cc
	}
	t.mu.Unlock()
	call.cc, call.err = cc, err
	close(call.done)
}

func (t *Transport) dialQUIC(authority string) (*quic.Conn, error) {
	var conf *tls.Config
	if t.TLSClientConfig != nil {
		conf = t.TLSClientConfig.Clone()
	} else {
		conf = &tls.Config{}
	}
	conf.NextProtos = []string{NextProtoH3}
	if conf.ServerName == "" {
		host, _, _ := net.SplitHostPort(authority)
		conf.ServerName = host
	}
	ctx := context.Background()
	if t.Dial != nil {
		return t.Dial(ctx, authority, conf, t.QUICConfig)
	}
	return quic.DialAddrEarly(ctx, authority, conf, t.QUICConfig)
}

// forget removes cc from the pool so new requests dial a new connection.
func (t *Transport) forget(cc *clientConn) {
	t.mu.Lock()
	if t.conns[cc.authority] == cc {
		delete(t.conns, cc.authority)
	}
	t.mu.Unlock()
}

// CloseIdleConnections closes the connections without requests in flight.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*clientConn
	for _, cc := range t.conns {
		if cc.idle() {
			idle = append(idle, cc)
		}
	}
	t.mu.Unlock()
	for _, cc := range idle {
		t.forget(cc)
		cc.close(ErrCodeNoError, "")
	}
}

// Close closes every connection with H3_NO_ERROR; requests in flight
// fail, and later RoundTrips return an error.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()
	for _, cc := range conns {
		cc.close(ErrCodeNoError, "")
	}
	return nil
}
