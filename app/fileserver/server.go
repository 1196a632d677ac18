package fileserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	appmetrics "github.com/turboretry/turboretry/app/metrics"
	"github.com/turboretry/turboretry/token"
)

// ExtraListener serves beside the TCP listener; the HTTP/3 listener is one.
type ExtraListener interface {
	// Serve runs until ctx is cancelled or Close is called. When ctx is
	// cancelled it should stop accepting and let requests in flight end.
	Serve(ctx context.Context) error
	// Close stops at once. The server calls it when Serve has not returned
	// within the shutdown timeout, or when Server.Close is called; it may
	// be called more than once.
	Close() error
}

// Server is the file server: handler, TLS, secret, logging and metrics,
// HTTPS over TCP, and the extra listeners added with AddListener.
type Server struct {
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	m       *serverMetrics
	certs   *certStore
	keyRing atomic.Pointer[token.KeyRing]
	secret  string // the secret file in use
	handler http.Handler
	front   http.Handler // Config.Handler's, or nil
	tlsConf *tls.Config
	root    *os.Root // nil when serving the embedded site

	ln         net.Listener
	httpSrv    *http.Server
	metricsLn  net.Listener
	metricsSrv *http.Server

	h3 *http3Listener // also in extras

	// shutdownTimeout is cfg.ShutdownTimeout until Drain replaces it.
	shutdownTimeout atomic.Int64

	mu      sync.Mutex
	extras  []ExtraListener
	started bool
	closed  bool
}

// New checks cfg, opens the root directory, binds the TCP (and metrics)
// listeners and loads or creates the certificate and the root secret, so
// that every configuration error surfaces here, before Serve.
func New(cfg Config) (_ *Server, err error) {
	cfg.fillDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, reg: appmetrics.NewRegistry()}
	s.shutdownTimeout.Store(int64(cfg.ShutdownTimeout))
	defer func() {
		if err != nil {
			s.closeResources() // whatever was opened before the failure
		}
	}()

	content := DemoFS()
	if cfg.Root != "" {
		if s.root, err = openRoot(cfg.Root); err != nil {
			return nil, err
		}
		content = s.root.FS()
	}

	if s.m, err = newServerMetrics(s.reg); err != nil {
		return nil, err
	}

	// Listeners first: an address in use should fail before any file
	// is created in the state directory.
	probe := func(tcp *net.TCPAddr) error { return s.inNetns(func() error { return probeUDPPort(tcp) }) }
	if cfg.Inherited != nil {
		probe = nil // the previous process holds the UDP port
	}
	if s.ln, s.metricsLn, err = cfg.listen(probe); err != nil {
		return nil, err
	}

	s.certs = &certStore{certFile: cfg.CertFile, keyFile: cfg.KeyFile, stateDir: cfg.StateDir, log: s.log}
	if _, err = s.certs.load(); err != nil {
		return nil, err
	}

	s.secret = cfg.SecretFile
	if s.secret == "" {
		s.secret = filepath.Join(cfg.StateDir, stateSecretFile)
	}
	kr, err := loadOrCreateSecret(s.secret, cfg.SecretFile == "", s.log)
	if err != nil {
		return nil, fmt.Errorf("root secret: %w", err)
	}
	s.keyRing.Store(kr)

	port := s.ln.Addr().(*net.TCPAddr).Port
	site := newContentHandler(content, cfg.Root == "", fileOptions{dotfiles: cfg.Dotfiles, listDirs: cfg.ListDirs})
	if cfg.Handler != nil {
		if s.front, err = cfg.Handler(Site{Files: site, Metrics: s.reg, Logger: s.log}); err != nil {
			return nil, err
		}
		site = s.front
	}
	s.handler = withAccessLog(withCommonHeaders(site, port), s.log, s.m)

	s.tlsConf = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: s.certs.getCertificate,
	}
	s.httpSrv = &http.Server{
		Handler: s.handler,
		// net/http adjusts the config it serves with; give it its own copy
		// so TLSConfig() readers never race with it.
		TLSConfig:         s.tlsConf.Clone(),
		ReadHeaderTimeout: cfg.Limits.HeaderTimeout, // 0: none, as for HTTP/3
		MaxHeaderBytes:    cfg.Limits.MaxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		// Failed handshakes from browsers that distrust the self-signed
		// certificate are routine: keep them at debug level.
		ErrorLog:  slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnState: s.trackConn,
	}

	if s.metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", appmetrics.Handler(s.reg, s.log))
		s.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	s.h3 = newHTTP3Listener(s)
	s.extras = append(s.extras, s.h3) // HTTP/3 on the same port number, over UDP (http3.go)
	if err := s.registerCollectors(); err != nil {
		return nil, err
	}
	return s, nil
}

// openRoot opens dir for serving. os.Root confines every lookup to dir,
// symbolic links included, so no request path can reach outside it.
func openRoot(dir string) (*os.Root, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("root directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root directory: %s is not a directory", dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("root directory: %w", err)
	}
	if _, err := fs.ReadDir(r.FS(), "."); err != nil {
		r.Close()
		return nil, fmt.Errorf("root directory %s is not readable: %w", dir, err)
	}
	return r, nil
}

func (s *Server) trackConn(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.m.tcpConns.Inc()
	case http.StateClosed, http.StateHijacked:
		s.m.tcpConns.Dec()
	}
}

// Handler returns the complete handler: files, whoami (or Config.Handler's
// handler), Alt-Svc, access log and request metrics. The HTTP/3 listener serves it unchanged.
func (s *Server) Handler() http.Handler { return s.handler }

// TLSConfig returns a copy of the TLS configuration, whose GetCertificate
// follows reloads. Set NextProtos (and MinVersion TLS 1.3) for QUIC.
func (s *Server) TLSConfig() *tls.Config { return s.tlsConf.Clone() }

// Metrics returns the registry /metrics serves: the server's HTTP and
// QUIC metrics, the offload's, and the go_* and process_* collectors
// (app/metrics). Register more collectors on it to serve them too.
func (s *Server) Metrics() *prometheus.Registry { return s.reg }

// KeyRing returns the token key ring for the current root secret. Reload
// may replace it, so fetch it per use rather than keeping it.
func (s *Server) KeyRing() *token.KeyRing { return s.keyRing.Load() }

// SecretPath returns the root secret file in use, for an offload agent
// that must share it.
func (s *Server) SecretPath() string { return s.secret }

// Workers returns the number of HTTP/3 workers configured (the default
// applied); the listener may run fewer where steering is refused.
func (s *Server) Workers() int { return s.cfg.Workers }

// RetryMode returns the configured Retry policy.
func (s *Server) RetryMode() RetryMode { return s.cfg.Retry }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// HTTP3Ready returns a channel that is closed once the HTTP/3 listener's
// UDP socket is bound and its address validation (and offload, if any)
// set up: from then on QUIC clients are served. It is never closed when
// Serve fails first.
func (s *Server) HTTP3Ready() <-chan struct{} { return s.h3.ready }

// HTTP3Addr returns the HTTP/3 listener's UDP address, or nil before
// HTTP3Ready is closed.
func (s *Server) HTTP3Addr() net.Addr {
	s.h3.mu.Lock()
	defer s.h3.mu.Unlock()
	return s.h3.addr
}

// Addr returns the TCP address; the UDP listener should bind the same port.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// MetricsAddr returns the metrics listener's address, or nil.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// SPKIHash returns the SPKI hash of the certificate in use (see SPKIHash).
func (s *Server) SPKIHash() string { return SPKIHash(s.certs.current().Leaf) }

// URL returns the base URL of the site.
func (s *Server) URL() string {
	return "https://" + urlHost(s.ln.Addr().(*net.TCPAddr)) + "/"
}

// urlHost names a listening address for a browser: an unspecified IP
// becomes localhost, which the generated certificate covers.
func urlHost(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}

// AddListener adds a listener to run with the server. It must be called
// before Serve.
func (s *Server) AddListener(l ExtraListener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("fileserver: AddListener after Serve or Close")
	}
	s.extras = append(s.extras, l)
	return nil
}

// Reload rereads the certificate (from the configured files, or the state
// directory) and the root secret. New TLS handshakes use the new
// certificate; established connections continue undisturbed. Whatever fails
// to load is kept as it was and reported.
func (s *Server) Reload() error {
	var errs []error
	if c, err := s.certs.load(); err != nil {
		errs = append(errs, fmt.Errorf("reloading certificate: %w", err))
	} else {
		s.log.Info("certificate loaded", "spki_sha256", SPKIHash(c.Leaf), "not_after", c.Leaf.NotAfter)
	}
	if kr, err := loadOrCreateSecret(s.secret, s.cfg.SecretFile == "", s.log); err != nil {
		errs = append(errs, fmt.Errorf("reloading root secret: %w", err))
	} else {
		s.keyRing.Store(kr)
		s.log.Info("root secret loaded", "file", s.secret)
		if err := s.reloadListenerSecrets(); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		s.log.Error("reload incomplete; keeping the previous values", "err", err)
	}
	return err
}

// secretReloader is an ExtraListener whose tokens use the root secret (the
// HTTP/3 listener's QUIC address validation).
type secretReloader interface {
	reloadSecret(secret []byte) error
}

// reloadListenerSecrets hands the reloaded root secret to the listeners
// that mint and check tokens with it.
func (s *Server) reloadListenerSecrets() error {
	secret, err := token.ReadSecretFile(s.secret)
	if err != nil {
		return fmt.Errorf("reloading root secret for listeners: %w", err)
	}
	s.mu.Lock()
	extras := append([]ExtraListener(nil), s.extras...)
	s.mu.Unlock()
	var errs []error
	for _, l := range extras {
		if r, ok := l.(secretReloader); ok {
			if err := r.reloadSecret(secret); err != nil {
				errs = append(errs, fmt.Errorf("reloading root secret for a listener: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// announce logs where the site is and how to open it in Chromium with QUIC.
func (s *Server) announce() {
	addr := s.ln.Addr().(*net.TCPAddr)
	origin := urlHost(addr)
	spki := s.SPKIHash()
	s.log.Info("serving", "url", s.URL(), "root", s.rootName(), "retry", s.cfg.Retry.String(), "spki_sha256", spki)
	s.log.Info("open in Chromium with QUIC forced",
		"command", fmt.Sprintf("chromium --origin-to-force-quic-on=%s --ignore-certificate-errors-spki-list=%s %s", origin, spki, s.URL()))
	if a := s.MetricsAddr(); a != nil {
		s.log.Info("metrics", "url", "http://"+a.String()+"/metrics")
	}
}

func (s *Server) rootName() string {
	if s.cfg.Root == "" {
		return "(embedded demo site)"
	}
	return s.cfg.Root
}

// Serve serves until ctx is cancelled, then shuts down gracefully: it stops
// accepting, lets requests in flight finish for up to the shutdown
// timeout, then closes what remains. It also stops, the same way, when a
// listener fails, and returns that error.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("fileserver: Serve called twice or after Close")
	}
	s.started = true
	extras := append([]ExtraListener(nil), s.extras...)
	s.mu.Unlock()
	defer s.closeResources()

	s.announce()
	serveCtx, stopExtras := context.WithCancel(ctx)
	defer stopExtras()
	errc := make(chan error, 2+len(extras))
	running := 0
	start := func(f func() error) {
		running++
		go func() { errc <- f() }()
	}
	start(func() error { return ignoreClosed(s.httpSrv.ServeTLS(s.ln, "", "")) })
	if s.metricsSrv != nil {
		start(func() error { return ignoreClosed(s.metricsSrv.Serve(s.metricsLn)) })
	}
	for _, x := range extras {
		start(func() error { return x.Serve(serveCtx) })
	}

	var first error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", time.Duration(s.shutdownTimeout.Load()))
	case first = <-errc:
		running--
		if first != nil {
			s.log.Error("listener failed; shutting down", "err", first)
		}
	}
	stopExtras()
	shutCtx, cancel := context.WithTimeout(context.Background(), time.Duration(s.shutdownTimeout.Load()))
	defer cancel()
	var wg sync.WaitGroup
	for _, hs := range []*http.Server{s.httpSrv, s.metricsSrv} {
		if hs == nil {
			continue
		}
		wg.Go(func() {
			if err := hs.Shutdown(shutCtx); err != nil {
				s.log.Warn("shutdown timeout reached; closing connections", "err", err)
				hs.Close()
			}
		})
	}
	// Extra listeners get the same deadline, then Close.
	deadline := shutCtx.Done()
	for running > 0 {
		select {
		case err := <-errc:
			running--
			if first == nil {
				first = err
			}
		case <-deadline:
			for _, x := range extras {
				x.Close()
			}
			deadline = nil // closed once; now wait for the rest
		}
	}
	wg.Wait()
	if first == nil {
		s.log.Info("stopped")
	}
	return first
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server at once: listeners and connections are closed
// without waiting for requests in flight. Serve, if running, returns.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	extras := s.extras
	s.mu.Unlock()
	var errs []error
	if started {
		for _, x := range extras {
			errs = append(errs, x.Close())
		}
	}
	errs = append(errs, s.httpSrv.Close())
	if s.metricsSrv != nil {
		errs = append(errs, s.metricsSrv.Close())
	}
	s.closeResources()
	return errors.Join(errs...)
}

// closeResources releases what New acquired; closing twice is harmless.
func (s *Server) closeResources() {
	if s.ln != nil {
		s.ln.Close()
	}
	if s.metricsLn != nil {
		s.metricsLn.Close()
	}
	if s.root != nil {
		s.root.Close()
	}
	if c, ok := s.front.(io.Closer); ok {
		c.Close()
	}
}
