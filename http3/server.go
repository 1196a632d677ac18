package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// NextProtoH3 is the ALPN protocol identifier of HTTP/3 (RFC 9114
// section 3.1).
const NextProtoH3 = "h3"

// DefaultReadHeaderTimeout is the Server's ReadHeaderTimeout when that is
// zero.
const DefaultReadHeaderTimeout = 10 * time.Second

// DefaultUniStreamTimeout is the Server's UniStreamTimeout when that is
// zero: stream types and SETTINGS come in the peer's first flight.
const DefaultUniStreamTimeout = 10 * time.Second

// DefaultWriteStallTimeout is the Server's WriteStallTimeout when that
// is zero: nginx's send_timeout, long enough for a paused media player,
// short enough that a client that never reads does not pin a handler.
const DefaultWriteStallTimeout = 60 * time.Second

// ErrServerClosed is returned by the Serve methods after Close or Shutdown.
var ErrServerClosed = http.ErrServerClosed

// ErrNoAltSvcPort is returned by Server.SetQUICHeaders when it finds no
// port to announce (neither Port, nor a listener's, nor one in Addr).
var ErrNoAltSvcPort = errors.New("no port can be announced, specify it explicitly using Server.Port or Server.Addr")

// contextKey is the type of this package's context keys.
type contextKey struct{ name string }

func (k *contextKey) String() string { return "http3 context value " + k.name }

// ServerContextKey is a context key: in a handler, the request context's
// value for it is the *Server serving the request.
var ServerContextKey = &contextKey{"http3-server"}

// RemoteAddrContextKey is a context key: in a handler, the request
// context's value for it is the connection's remote address, a net.Addr
// (Request.RemoteAddr is its string form).
var RemoteAddrContextKey = &contextKey{"remote-addr"}

// QUICListener is what ServeListener accepts connections from;
// *quic.Listener and *quic.EarlyListener implement it.
type QUICListener interface {
	Accept(ctx context.Context) (*quic.Conn, error)
	Addr() net.Addr
	io.Closer
}

// Server is an HTTP/3 server.
type Server struct {
	// Addr is the UDP address ListenAndServe listens on, ":https" when
	// empty.
	Addr string
	// Port is the port announced by SetQUICHeaders; 0 takes it from Addr
	// or from the first listener served.
	Port int
	// Handler serves requests; http.DefaultServeMux when nil.
	Handler http.Handler
	// TLSConfig is used by ListenAndServe and Serve. "h3" is added to its
	// NextProtos when missing.
	TLSConfig *tls.Config
	// QUICConfig configures the QUIC connections of ListenAndServe and
	// Serve.
	QUICConfig *quic.Config
	// MaxHeaderBytes bounds the decoded size of a request's header section
	// (our SETTINGS_MAX_FIELD_SECTION_SIZE); http.DefaultMaxHeaderBytes
	// when 0 or negative.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the wait for a request's header section
	// once its stream is open: a stream that has not delivered a complete
	// HEADERS frame by then is reset with H3_REQUEST_INCOMPLETE, so a
	// client cannot hold a request slot open for the connection's whole
	// idle timeout. Zero means DefaultReadHeaderTimeout; a negative value
	// disables the limit.
	ReadHeaderTimeout time.Duration
	// MaxConnHeaderBytes bounds the bytes that the header sections being
	// read on one connection may occupy at once: a HEADERS frame reserves
	// its declared length before its payload is read and releases it once
	// decoded; a frame that does not fit waits (at most until
	// ReadHeaderTimeout, then H3_REQUEST_REJECTED). Zero or negative
	// means twice the effective MaxHeaderBytes; a value below
	// MaxHeaderBytes is raised to it, so one section of the maximum size
	// can always be read.
	MaxConnHeaderBytes int
	// UniStreamTimeout bounds the wait for the type of a peer's
	// unidirectional stream (after it, the stream is stopped with
	// H3_STREAM_CREATION_ERROR) and for the SETTINGS frame on its control
	// stream (after it, the connection is closed with
	// H3_MISSING_SETTINGS). Zero means DefaultUniStreamTimeout; a
	// negative value disables the limit.
	UniStreamTimeout time.Duration
	// WriteStallTimeout bounds how long a response write may wait for
	// the client to take data (flow control): a write that cannot hand
	// 16 KiB to the QUIC stream within it fails with an error matching
	// os.ErrDeadlineExceeded and the stream is reset with
	// H3_REQUEST_CANCELLED. A deadline the handler sets with
	// http.ResponseController applies as well. Zero means
	// DefaultWriteStallTimeout; a negative value disables the limit.
	WriteStallTimeout time.Duration
	// EnableDatagrams enables HTTP Datagrams (RFC 9297): the server
	// sends SETTINGS_H3_DATAGRAM, and handlers that take over their
	// stream (HTTPStreamer) can send and receive datagrams on it. Serve and
	// ListenAndServe enable QUIC datagrams (quic.Config.EnableDatagrams)
	// for it; connections given to ServeListener, ServeQUICConn or
	// NewRawServerConn must have them enabled already, or the setting is
	// not sent.
	EnableDatagrams bool
	// AdditionalSettings are sent in our SETTINGS frame besides those
	// this package sends (as quic-go). Settings that RFC 9114, RFC 9204,
	// RFC 9220 or RFC 9297 define, or that HTTP/3 forbids, are refused:
	// the Serve methods return an error.
	AdditionalSettings map[uint64]uint64
	// IdleTimeout, when positive, closes a connection (with H3_NO_ERROR)
	// that has had no request in progress for that long. Only HTTP/3
	// requests count, not QUIC-level activity such as PINGs, as in
	// quic-go. Zero or negative: no such timeout (the QUIC idle timeout
	// still applies).
	IdleTimeout time.Duration
	// ConnContext, when set, derives the base context of each
	// connection's requests from ctx, which has ServerContextKey,
	// http.LocalAddrContextKey and RemoteAddrContextKey values. It must
	// not return nil. It runs without any lock of the Server's or the
	// connection's held, so it may call their methods.
	ConnContext func(ctx context.Context, c *quic.Conn) context.Context
	// Logger receives errors: handler panics, protocol violations. nil
	// means slog.Default().
	Logger *slog.Logger

	mu           sync.Mutex
	listeners    map[QUICListener]bool // value: the server created it
	conns        map[*serverConn]struct{}
	closed       bool
	shutdown     bool
	acceptCtx    context.Context // canceled by Close and Shutdown
	acceptCancel context.CancelFunc
	noConns      chan struct{} // closed when the last of conns is done; nil while none waits
	altSvc       string

	stats serverCounters

	// testHookStreamType, when set by a test, is called once the type of
	// each peer unidirectional stream has been read.
	testHookStreamType func(*quic.Conn, StreamType)
	// testHookResponseWrite, when set by a test, sees each Write a
	// response makes to its request stream.
	testHookResponseWrite func(quic.StreamID, []byte)
}

// acceptContext returns the context that ends all Accept calls.
func (s *Server) acceptContext() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	return s.acceptCtx
}

func (s *Server) initLocked() {
	if s.acceptCtx == nil {
		s.acceptCtx, s.acceptCancel = context.WithCancel(context.Background())
	}
}

func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.shutdown
}

// shuttingDown reports whether Shutdown began and Close did not come.
func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown && !s.closed
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) maxHeaderBytes() uint64 {
	if s.MaxHeaderBytes <= 0 {
		return http.DefaultMaxHeaderBytes
	}
	return uint64(s.MaxHeaderBytes)
}

// maxConnHeaderBytes returns the per-connection header budget.
func (s *Server) maxConnHeaderBytes() uint64 {
	perSection := s.maxHeaderBytes()
	if s.MaxConnHeaderBytes <= 0 {
		return 2 * perSection
	}
	return max(uint64(s.MaxConnHeaderBytes), perSection)
}

// additionalSettings checks and encodes AdditionalSettings.
func (s *Server) additionalSettings() (string, error) {
	return encodeAdditionalSettings(s.AdditionalSettings)
}

// timeoutOrDefault resolves a timeout field: zero is def, negative none
// (0).
func timeoutOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// readHeaderTimeout returns the header timeout to apply, 0 for none.
func (s *Server) readHeaderTimeout() time.Duration {
	return timeoutOrDefault(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
}

func (s *Server) uniStreamTimeout() time.Duration {
	return timeoutOrDefault(s.UniStreamTimeout, DefaultUniStreamTimeout)
}

func (s *Server) writeStallTimeout() time.Duration {
	return timeoutOrDefault(s.WriteStallTimeout, DefaultWriteStallTimeout)
}

// settings returns the SETTINGS a connection of s sends: datagrams is
// whether HTTP Datagrams are on, other the encoded AdditionalSettings.
// RFC 9204 section 5: a dynamic table capacity of 0 (the default, left
// out) means the peer never references a dynamic table. Extended CONNECT
// (RFC 9220) is always on, as in quic-go: a handler sees the protocol in
// Request.Proto.
func (s *Server) settings(datagrams bool, other string) settings {
	return settings{MaxFieldSectionSize: s.maxHeaderBytes(), HasMaxFieldSectionSize: true,
		EnableConnectProtocol: true, H3Datagram: datagrams, Other: other}
}

// ConfigureTLSConfig returns a copy of c whose NextProtos is exactly "h3"
// and whose minimum version is TLS 1.3, as QUIC requires; the configs its
// GetConfigForClient returns get the same. The copy shares c's session
// ticket keys, made now if c has none yet (crypto/tls makes them on first
// use, and a copy made before that would get keys of its own, so tickets
// would not survive from one Server to the next; golang.org/issue/60506).
func ConfigureTLSConfig(c *tls.Config) *tls.Config { return configureTLS(c, nil) }

func configureTLS(c *tls.Config, adjust func(*tls.Config)) *tls.Config {
	if c == nil {
		c = &tls.Config{}
	}
	_, _ = c.DecryptTicket(nil, tls.ConnectionState{}) // makes the ticket keys
	c = c.Clone()
	c.NextProtos = []string{NextProtoH3}
	if c.MinVersion < tls.VersionTLS13 {
		c.MinVersion = tls.VersionTLS13
	}
	if adjust != nil {
		adjust(c)
	}
	if f := c.GetConfigForClient; f != nil {
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			conf, err := f(hello)
			if conf == nil || err != nil {
				return conf, err
			}
			return configureTLS(conf, adjust), nil
		}
	}
	return c
}

// tlsConfig is ConfigureTLSConfig for the listeners of ListenAndServe
// and Serve, whose session tickets carry the server's SETTINGS for 0-RTT
// (settings_0rtt.go).
func (s *Server) tlsConfig(c *tls.Config) *tls.Config {
	other, _ := s.additionalSettings() // serveListener checks them
	return configureTLS(c, ticketSettings(s.settings(s.EnableDatagrams, other)))
}

// ListenAndServe listens on Addr with TLSConfig and serves until Close.
func (s *Server) ListenAndServe() error {
	return s.listenAndServe(s.TLSConfig)
}

// ListenAndServeTLS is ListenAndServe with the certificate read from
// certFile and keyFile.
func (s *Server) ListenAndServeTLS(certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	var conf *tls.Config
	if s.TLSConfig != nil {
		_, _ = s.TLSConfig.DecryptTicket(nil, tls.ConnectionState{}) // the clone shares its ticket keys
		conf = s.TLSConfig.Clone()
	} else {
		conf = &tls.Config{}
	}
	conf.Certificates = []tls.Certificate{cert}
	return s.listenAndServe(conf)
}

func (s *Server) listenAndServe(conf *tls.Config) error {
	if s.closing() {
		return ErrServerClosed
	}
	if conf == nil {
		return errors.New("http3: Server has no TLSConfig")
	}
	addr := s.Addr
	if addr == "" {
		addr = ":https"
	}
	// The listener owns its socket: it stays open while Shutdown drains
	// the connections (after this returns ErrServerClosed), and Close
	// closes both.
	ln, err := quic.ListenAddrEarly(addr, s.tlsConfig(conf), s.quicConfig())
	if err != nil {
		return err
	}
	return s.serveListener(ln, true)
}

// quicConfig is QUICConfig, with QUIC datagrams for EnableDatagrams.
func (s *Server) quicConfig() *quic.Config {
	qconf := s.QUICConfig
	if s.EnableDatagrams && (qconf == nil || !qconf.EnableDatagrams) {
		if qconf == nil {
			qconf = &quic.Config{}
		} else {
			qconf = qconf.Clone()
		}
		qconf.EnableDatagrams = true
	}
	return qconf
}

// Serve serves HTTP/3 on an existing socket with TLSConfig. The socket
// is not closed when Serve returns.
func (s *Server) Serve(conn net.PacketConn) error {
	return s.serve(conn, s.TLSConfig)
}

func (s *Server) serve(conn net.PacketConn, conf *tls.Config) error {
	if s.closing() {
		return ErrServerClosed
	}
	if conf == nil {
		return errors.New("http3: Server has no TLSConfig")
	}
	ln, err := quic.ListenEarly(conn, s.tlsConfig(conf), s.quicConfig())
	if err != nil {
		return err
	}
	return s.serveListener(ln, true)
}

// ServeListener serves connections accepted from ln; the listener's TLS
// configuration must offer ALPN "h3". As in quic-go, closing the server
// does not close ln: another Server may go on serving it (hot swap).
func (s *Server) ServeListener(ln QUICListener) error {
	return s.serveListener(ln, false)
}

func (s *Server) serveListener(ln QUICListener, owned bool) error {
	if _, err := s.additionalSettings(); err != nil {
		if owned {
			ln.Close()
		}
		return err
	}
	if err := s.addListener(ln, owned); err != nil {
		if owned {
			ln.Close()
		}
		return err
	}
	ctx := s.acceptContext()
	for {
		qc, err := ln.Accept(ctx)
		if err != nil {
			if s.closing() {
				// The listener stays open until Shutdown has drained its
				// connections: closing it would drop them.
				return ErrServerClosed
			}
			s.removeListener(ln)
			return err
		}
		sc := s.newConn(qc)
		if sc == nil {
			s.stats.refuse(RefusedServerClosing)
			qc.CloseWithError(quic.ApplicationErrorCode(ErrCodeNoError), "server closed")
			continue
		}
		// start writes our SETTINGS, which may wait: not on the accept
		// loop. The goroutine ends with it.
		go sc.serveOnDemand()
	}
}

// ServeQUICConn serves one QUIC connection (its TLS configuration must
// have negotiated "h3") until it closes, then waits for its handlers to
// return. It returns the reason the connection ended, as quic-go does,
// or ErrServerClosed after Close. After Shutdown began the connection is
// served going away (GOAWAY; its requests are refused with
// H3_REQUEST_REJECTED, which clients retry on a new connection): a
// server draining after a restart takes this way the connections whose
// handshake its listener finished after Shutdown (Shutdown itself stops
// taking connections from the listeners).
func (s *Server) ServeQUICConn(conn *quic.Conn) error {
	if _, err := s.additionalSettings(); err != nil {
		return err
	}
	sc := s.newConn(conn)
	if sc == nil {
		return ErrServerClosed
	}
	err := sc.serve()
	sc.requests.Wait()
	return err
}

func (s *Server) addListener(ln QUICListener, owned bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.shutdown {
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = make(map[QUICListener]bool)
	}
	s.listeners[ln] = owned
	if s.altSvc == "" {
		port := s.Port
		if port == 0 {
			if ua, ok := ln.Addr().(*net.UDPAddr); ok {
				port = ua.Port
			}
		}
		if port != 0 {
			s.altSvc = altSvcValue(port)
		}
	}
	return nil
}

// removeListener forgets a listener that failed, closing it when the
// server created it.
func (s *Server) removeListener(ln QUICListener) {
	s.mu.Lock()
	owned, ok := s.listeners[ln]
	delete(s.listeners, ln)
	s.mu.Unlock()
	if ok && owned {
		ln.Close()
	}
}

// altSvcValue is the Alt-Svc value announcing HTTP/3 on port for 30 days.
func altSvcValue(port int) string {
	return `h3=":` + strconv.Itoa(port) + `"; ma=2592000`
}

// SetQUICHeaders adds the Alt-Svc header that announces this server's
// HTTP/3 port to responses sent over TCP (RFC 7838). The port is Port, or
// that of Addr, or that of the first listener served.
func (s *Server) SetQUICHeaders(hdr http.Header) error {
	s.mu.Lock()
	v := s.altSvc
	s.mu.Unlock()
	if v == "" {
		port := s.Port
		if port == 0 {
			_, p, err := net.SplitHostPort(s.Addr)
			if err != nil {
				return ErrNoAltSvcPort
			}
			if port, err = net.LookupPort("udp", p); err != nil || port == 0 {
				return ErrNoAltSvcPort // port 0: not listening yet
			}
		}
		v = altSvcValue(port)
	}
	hdr.Add("Alt-Svc", v)
	return nil
}

// newConn registers a connection, or returns nil after Close. During
// Shutdown the connection goes away once started (serverConn.start).
func (s *Server) newConn(qc *quic.Conn) *serverConn {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	other, _ := s.additionalSettings() // the Serve methods checked them
	// Without s.mu: ConnContext and the qlog Trace are the application's
	// code, which may call into the Server.
	sc := newServerConn(s, qc, other)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.conns == nil {
		s.conns = make(map[*serverConn]struct{})
	}
	s.conns[sc] = struct{}{}
	s.stats.connsAccepted.Add(1)
	s.stats.connsActive.Add(1)
	return sc
}

func (s *Server) connDone(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	if len(s.conns) == 0 && s.noConns != nil {
		close(s.noConns)
		s.noConns = nil
	}
	s.mu.Unlock()
	s.stats.connsActive.Add(-1)
}

// connsDone returns a channel closed once no connection is open. Unlike
// a WaitGroup's Wait, waiting on it may overlap new connections (those
// Shutdown serves going away).
func (s *Server) connsDone() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noConns == nil {
		s.noConns = make(chan struct{})
		if len(s.conns) == 0 {
			close(s.noConns)
			ch := s.noConns
			s.noConns = nil
			return ch
		}
	}
	return s.noConns
}

// openConns returns the open connections.
func (s *Server) openConns() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*serverConn, 0, len(s.conns))
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	return conns
}

// stopAccepting marks the server closed or shut down and ends the
// Accept calls.
func (s *Server) stopAccepting(shutdown bool) {
	s.mu.Lock()
	if shutdown {
		s.shutdown = true
	} else {
		s.closed = true
	}
	s.initLocked()
	s.mu.Unlock()
	s.acceptCancel()
}

// Close closes every connection at once with H3_NO_ERROR, aborting the
// requests in flight, and then the listeners the server created (those
// of ListenAndServe and Serve, not those given to ServeListener).
func (s *Server) Close() error {
	s.stopAccepting(false)
	for _, sc := range s.openConns() {
		sc.close(ErrCodeNoError, "server closed")
	}
	s.mu.Lock()
	lns := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for ln, owned := range lns {
		if owned {
			ln.Close()
		}
	}
	return nil
}

// Shutdown stops accepting connections, sends GOAWAY on every connection
// naming the first request stream it will not process (RFC 9114 section
// 5.2), waits for the requests in flight to finish and for the clients to
// close their connections (at most drainTimeout after the last request),
// then closes the listeners it created. A connection taken from a
// listener meanwhile (by the accept loop it stops, or given to
// ServeQUICConn) goes away at once and is waited for too. When ctx ends
// first, everything is closed at once and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting(true)
	for _, sc := range s.openConns() {
		sc.goAway()
	}
	var err error
	select {
	case <-s.connsDone():
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.Close()
	<-s.connsDone()
	return err
}
