package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// Transport is an HTTP/3 client, an http.RoundTripper. It keeps one QUIC
// connection per authority (host:port) and sends concurrent requests on
// it as separate streams. A connection that received GOAWAY takes no new
// requests: the next request dials a new one. Requests the server did not
// process (on a stream at or above the GOAWAY's ID, which are canceled when
// it arrives, or reset with H3_REQUEST_REJECTED; RFC 9114 section 5.2) are
// sent again on a new connection when their body can be replayed: they
// have none, or GetBody is set.
//
// Connections are dialed early (quic.Transport.DialEarly) over one UDP
// socket per address family that all the Transport's connections share,
// as in quic-go: when the TLS config has a ClientSessionCache and the
// server allowed early data, requests may go out in 0-RTT. Only safe methods without a body do (RFC 8470, RFC 9114
// section 4.1.1: 0-RTT can be replayed); other requests wait until the
// handshake completes.
type Transport struct {
	// TLSClientConfig is cloned for every connection; NextProtos is set
	// to "h3" and ServerName defaults to the request's host.
	TLSClientConfig *tls.Config
	// QUICConfig configures the QUIC connections.
	QUICConfig *quic.Config
	// Dial, when set, replaces the Transport's own dialing (and its
	// shared sockets).
	Dial func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error)
	// EnableDatagrams enables HTTP Datagrams (RFC 9297) on the
	// Transport's connections: we send SETTINGS_H3_DATAGRAM, and request
	// streams (RequestStream) can send and receive datagrams. QUICConfig,
	// when set, must enable QUIC datagrams (quic.Config.EnableDatagrams);
	// a nil QUICConfig gets them.
	EnableDatagrams bool
	// AdditionalSettings are sent in our SETTINGS frame besides those
	// this package sends. Settings that RFC 9114, RFC 9204, RFC 9220 or
	// RFC 9297 define, or that HTTP/3 forbids, make RoundTrip fail.
	AdditionalSettings map[uint64]uint64
	// DisableCompression stops the Transport from asking for gzip. By
	// default a request without Accept-Encoding and Range (and other than
	// HEAD and CONNECT) is sent with "accept-encoding: gzip", and a gzip
	// response is decoded transparently (Response.Uncompressed; the
	// Content-Encoding and Content-Length fields are removed), as
	// net/http and quic-go do. A request that sets Accept-Encoding itself
	// gets the body as sent.
	DisableCompression bool
	// MaxResponseHeaderBytes bounds the decoded size of a response header
	// section (our SETTINGS_MAX_FIELD_SECTION_SIZE);
	// http.DefaultMaxHeaderBytes when 0 or negative. An int, as in
	// quic-go.
	MaxResponseHeaderBytes int
	// Logger receives protocol errors; nil means slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	conns   map[string]*ClientConn
	dialing map[string]*dialCall
	sockets [2]*quic.Transport // IPv4, IPv6: see quicTransport
	closed  bool
}

var _ http.RoundTripper = (*Transport)(nil)

// dialCall is a dial in progress, shared by the requests that wait for it.
// waiters and delivered are guarded by Transport.mu: the new connection is
// handed over with every waiting request already counted in it, so
// CloseIdleConnections cannot see it idle before they start.
type dialCall struct {
	done      chan struct{}
	cc        *ClientConn
	err       error
	waiters   int
	delivered bool
}

// ErrTransportClosed is returned by RoundTrip and RoundTripOpt after
// Close.
var ErrTransportClosed = errors.New("http3: transport is closed")

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

// RoundTripOpt holds the options of Transport.RoundTripOpt, as in
// quic-go.
type RoundTripOpt struct {
	// OnlyCachedConn makes RoundTripOpt fail with ErrNoCachedConn instead
	// of dialing when the Transport has no connection to the request's
	// authority (one being dialed counts as cached).
	OnlyCachedConn bool
}

// ErrNoCachedConn is returned by RoundTripOpt with OnlyCachedConn when
// there is no connection to use.
var ErrNoCachedConn = errors.New("http3: no cached connection was available")

// MethodGet0RTT and MethodHead0RTT, as a request's Method, send a GET or
// HEAD in 0-RTT when the connection allows it, as in quic-go. Plain GET
// and HEAD requests without a body are sent in 0-RTT anyway (see
// Transport); other methods wait for the handshake.
const (
	MethodGet0RTT  = "GET_0RTT"
	MethodHead0RTT = "HEAD_0RTT"
)

// RoundTrip sends req on the connection for its authority, dialing one
// when there is none, and returns the response once its header arrived;
// the body is streamed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.RoundTripOpt(req, RoundTripOpt{})
}

// RoundTripOpt is RoundTrip with options.
func (t *Transport) RoundTripOpt(req *http.Request, opt RoundTripOpt) (*http.Response, error) {
	rsp, err := t.roundTrip(req, opt)
	if err != nil && req.Body != nil {
		req.Body.Close()
	}
	return rsp, err
}

// maxRetries bounds how often one request is sent again on a new
// connection after its connection refused it.
const maxRetries = 3

func (t *Transport) roundTrip(req *http.Request, opt RoundTripOpt) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("http3: request has no URL")
	}
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("http3: unsupported scheme %q", req.URL.Scheme)
	}
	if req.URL.Host == "" {
		return nil, errors.New("http3: request has no host")
	}
	if err := t.roundTripCheck(); err != nil {
		return nil, err
	}
	authority := authorityAddr(req.URL)
	trace := httptrace.ContextClientTrace(req.Context())
	cur := req       // the request of this attempt: a replay has its own body
	coalesce := true // until the server answers 421 on a shared connection
	for attempt := 0; ; attempt++ {
		traceGetConn(trace, authority)
		cc, reused, err := t.getConn(req.Context(), authority, opt.OnlyCachedConn, coalesce)
		if err == nil {
			traceGotConn(trace, cc.qc, reused)
			var rsp *http.Response
			if rsp, err = cc.roundTrip(cur); err == nil {
				next := t.misdirected(rsp, cur, cc, authority)
				if next == nil {
					return rsp, nil
				}
				cur, coalesce = next, false
				continue
			}
		}
		next, rerr := replayable(cur, err)
		if rerr != nil {
			err = rerr
		}
		if next == nil || attempt == maxRetries {
			if cur != req && cur.Body != nil {
				cur.Body.Close()
			}
			return nil, err
		}
		cur = next // not processed by the server: a new connection takes it
	}
}

// roundTripCheck checks the options that make every request fail.
func (t *Transport) roundTripCheck() error {
	if t.EnableDatagrams && t.QUICConfig != nil && !t.QUICConfig.EnableDatagrams {
		return errors.New("http3: HTTP datagrams enabled, but QUIC datagrams disabled (QUICConfig.EnableDatagrams)")
	}
	_, err := encodeAdditionalSettings(t.AdditionalSettings)
	return err
}

// replayable returns the request to send again on a new connection after
// err, or nil when err does not allow it. A request that was never sent
// goes again as it is. One that the server did not process (RFC 9114
// sections 4.1.1 and 5.2) goes again when its body can be replayed: it
// has none, or GetBody provides a fresh copy.
func replayable(req *http.Request, err error) (*http.Request, error) {
	var unusable *connUnusableError
	switch {
	case errors.Is(err, errConnGoingAway), errors.As(err, &unusable):
		return req, nil // never sent
	case !notProcessed(err):
		return nil, nil
	case req.Body == nil || req.Body == http.NoBody:
		return req, nil
	case req.GetBody == nil:
		// net/http's words for the same case.
		return nil, fmt.Errorf("http3: Transport: cannot retry err [%w] after Request.Body was written; define Request.GetBody to avoid this error", err)
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("http3: replaying a request not processed by the server: %w", err)
	}
	r := *req
	r.Body = body
	return &r, nil
}

// notProcessed reports whether err says the server did not process the
// request: its stream was at or above the ID of the server's GOAWAY, or
// the server reset it with H3_REQUEST_REJECTED.
func notProcessed(err error) bool {
	var np *notProcessedError
	if errors.As(err, &np) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Remote && e.ErrorCode == ErrCodeRequestRejected
}

// notProcessedError is the error of a request that failed on a stream the
// server's GOAWAY excluded (RFC 9114 section 5.2): the server promised not
// to process it, so it may be sent again.
type notProcessedError struct{ err error }

func (e *notProcessedError) Error() string {
	return "http3: request not processed by the server (GOAWAY): " + e.err.Error()
}

func (e *notProcessedError) Unwrap() error { return e.err }

// authorityAddr returns the URL's host:port, with port 443 when it has
// none; an IPv6 literal keeps its brackets only once ("[::1]:443").
func authorityAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// getConn returns a connection to authority, dialing one when the pool
// has none, with the request already counted in its active requests: the
// caller ends it with requestDone. Counting under t.mu, where
// CloseIdleConnections looks for idle connections, keeps it from closing
// the connection under a request that has just taken it. reused reports
// a connection from the pool. With onlyCached it does not dial; with
// coalesce it may reuse another origin's connection (coalesce.go).
func (t *Transport) getConn(ctx context.Context, authority string, onlyCached, coalesce bool) (cc *ClientConn, reused bool, err error) {
	var addr *net.UDPAddr // authority resolved, for coalescing and the dial
	t.mu.Lock()
	for {
		if t.closed {
			t.mu.Unlock()
			return nil, false, ErrTransportClosed
		}
		if cc := t.conns[authority]; cc != nil {
			// One that closed (an idle timeout) may not have left the
			// pool yet: it is not cached any more.
			if cc.qc.Context().Err() == nil && cc.startRequest() {
				t.mu.Unlock()
				return cc, true, nil
			}
			delete(t.conns, authority) // it received GOAWAY or closed: dial a new one
		}
		if t.dialing[authority] != nil {
			break
		}
		if onlyCached {
			t.mu.Unlock()
			return nil, false, ErrNoCachedConn
		}
		if !coalesce || t.Dial != nil || len(t.conns) == 0 {
			break
		}
		if addr != nil {
			if cc := t.coalesceLocked(authority, addr); cc != nil {
				t.conns[authority] = cc
				t.mu.Unlock()
				return cc, true, nil
			}
			break
		}
		// Another origin's connection may serve this one if it is to
		// the same address: resolve, then look again (the pool may have
		// changed meanwhile).
		t.mu.Unlock()
		if addr, err = resolveUDPAddr(ctx, authority); err != nil {
			return nil, false, err
		}
		t.mu.Lock()
	}
	call := t.dialing[authority]
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		if t.dialing == nil {
			t.dialing = make(map[string]*dialCall)
		}
		t.dialing[authority] = call
		// The dial is shared: one request giving up must not fail the
		// others waiting for it, so it does not end with ctx; it keeps
		// ctx's values (the first request's httptrace).
		go t.dial(context.WithoutCancel(ctx), call, authority, addr)
	}
	call.waiters++
	t.mu.Unlock()
	select {
	case <-call.done:
		return call.cc, false, call.err
	case <-ctx.Done():
		t.mu.Lock()
		counted := call.delivered
		if !counted {
			call.waiters--
		}
		t.mu.Unlock()
		if counted && call.cc != nil {
			call.cc.requestDone()
		}
		return nil, false, ctx.Err()
	}
}

// dial connects to authority (at addr when already resolved) for the
// requests waiting on call.
func (t *Transport) dial(ctx context.Context, call *dialCall, authority string, addr *net.UDPAddr) {
	qc, err := t.dialQUIC(ctx, authority, addr)
	var cc *ClientConn
	if err == nil {
		other, _ := encodeAdditionalSettings(t.AdditionalSettings) // RoundTrip checked them
		if cc, err = newClientConn(t, qc, authority, other, false); err != nil {
			cc = nil
		}
	}
	t.mu.Lock()
	delete(t.dialing, authority)
	switch {
	case err != nil:
	case t.closed:
		cc.close(ErrCodeNoError, "")
		cc, err = nil, ErrTransportClosed
	default:
		cc.addRequests(call.waiters)
		if cc.qc.Context().Err() != nil {
			// Already closed (an early dial returns before the
			// handshake): its forget ran before it was pooled, so do not
			// pool it. A close from now on waits for t.mu and then
			// forgets it.
			break
		}
		if t.conns == nil {
			t.conns = make(map[string]*ClientConn)
		}
		t.conns[authority] = cc
	}
	// Under t.mu: a waiter whose context ended reads them there.
	call.cc, call.err, call.delivered = cc, err, true
	t.mu.Unlock()
	close(call.done)
}

func (t *Transport) dialQUIC(ctx context.Context, authority string, ua *net.UDPAddr) (*quic.Conn, error) {
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
	qconf := t.QUICConfig
	if t.EnableDatagrams && qconf == nil {
		qconf = &quic.Config{EnableDatagrams: true}
	}
	if t.Dial != nil {
		return t.Dial(ctx, authority, conf, qconf)
	}
	if ua == nil {
		var err error
		if ua, err = resolveUDPAddr(ctx, authority); err != nil {
			return nil, err
		}
	}
	qt, err := t.quicTransport(ua)
	if err != nil {
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)
	traceDialStart(trace, ua.String())
	qc, err := qt.DialEarly(ctx, ua, conf, qconf)
	traceDialDone(trace, ua.String(), qc, err)
	return qc, err
}

// resolveUDPAddr resolves host:port with the default resolver, which
// reports DNSStart and DNSDone to an httptrace in ctx, preferring an
// IPv4 address as net.ResolveUDPAddr does.
func resolveUDPAddr(ctx context.Context, hostPort string) (*net.UDPAddr, error) {
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort("udp", portStr)
	if err != nil {
		return nil, err
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	pick := ips[0]
	for _, ip := range ips {
		if ip.IP.To4() != nil {
			pick = ip
			break
		}
	}
	return &net.UDPAddr{IP: pick.IP, Port: port, Zone: pick.Zone}, nil
}

// quicTransport returns the QUIC transport that dials addr: one UDP
// socket per address family, shared by all the Transport's connections
// as in quic-go (so a server sees one client address for all its
// origins), created on first use and closed by Close.
func (t *Transport) quicTransport(addr *net.UDPAddr) (*quic.Transport, error) {
	family, local := 0, &net.UDPAddr{IP: net.IPv4zero}
	if addr.IP.To4() == nil {
		family, local = 1, &net.UDPAddr{IP: net.IPv6zero}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrTransportClosed
	}
	if qt := t.sockets[family]; qt != nil {
		return qt, nil
	}
	pc, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, err
	}
	t.sockets[family] = &quic.Transport{Conn: pc}
	return t.sockets[family], nil
}

// forget removes cc from the pool, under every origin it serves, so new
// requests dial a new connection.
func (t *Transport) forget(cc *ClientConn) {
	t.mu.Lock()
	maps.DeleteFunc(t.conns, func(_ string, c *ClientConn) bool { return c == cc })
	t.mu.Unlock()
}

// CloseIdleConnections closes the connections without requests in flight.
// A connection found idle leaves the pool under the same lock, so no
// request can take it before it is closed.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*ClientConn
	for authority, cc := range t.conns {
		if cc.idle() {
			delete(t.conns, authority)
			if !slices.Contains(idle, cc) { // one connection may serve several origins
				idle = append(idle, cc)
			}
		}
	}
	t.mu.Unlock()
	for _, cc := range idle {
		cc.closeByTransport()
	}
}

// closeByTransport closes a pooled connection for Close or
// CloseIdleConnections with application error 0, not H3_NO_ERROR (RFC
// 9114 section 8.1), as quic-go's Transport does: a quic-go program's
// server may look for that code (Server.ServeQUICConn returns the
// client's close), and RFC 9114 section 9 has peers treat an unknown code
// as H3_NO_ERROR.
func (cc *ClientConn) closeByTransport() {
	_ = cc.CloseWithError(0, "")
}

// Close closes every connection (with application error 0, as quic-go)
// and the Transport's UDP sockets; requests in flight fail, and later
// RoundTrips return an error.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = nil
	sockets := t.sockets
	t.sockets = [2]*quic.Transport{}
	t.mu.Unlock()
	for _, cc := range conns {
		cc.closeByTransport()
	}
	for _, qt := range sockets {
		if qt != nil {
			qt.Close()
			qt.Conn.Close()
		}
	}
	return nil
}
