package fileserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// http3Listener serves HTTP/3 with the server's handler and certificate
// on the UDP port of the same number as the TCP listener, which is what
// the Alt-Svc header announces. It is added by New as an ExtraListener.
type http3Listener struct {
	s       *Server
	tlsConf *tls.Config
	ready   chan struct{} // closed once the UDP socket serves

	mu     sync.Mutex
	srv    *http3.Server
	tr     *quic.Transport
	off    *host.Offload // the running offload, or nil
	addr   net.Addr      // the UDP address, once ready
	closed bool
}

// offload returns the running offload, or nil. l may be nil.
func (l *http3Listener) offload() *host.Offload {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.off
}

// reloadSecret switches the QUIC address validation to a reloaded root
// secret (SIGHUP). Before Serve bound its socket there is nothing to do:
// Serve reads the secret file itself.
func (l *http3Listener) reloadSecret(secret []byte) error {
	l.mu.Lock()
	tr, off := l.tr, l.off
	l.mu.Unlock()
	if tr == nil {
		return nil
	}
	if off != nil {
		// Agent and host switch together, so each keeps accepting the
		// other's tokens.
		if err := off.SetKeyRing(l.s.KeyRing()); err != nil {
			return err
		}
	}
	return tr.SetTokenSecret(secret)
}

// newHTTP3Listener must run in New: Server.TLSConfig clones the config
// that net/http's ServeTLS modifies when Serve starts (HTTP/2 setup), so
// cloning it from the listener's goroutine would race with that.
func newHTTP3Listener(s *Server) *http3Listener {
	return &http3Listener{s: s, tlsConf: http3.ConfigureTLSConfig(s.TLSConfig()), ready: make(chan struct{})} // h3 only, TLS 1.3
}

// Serve binds the UDP socket and serves until ctx ends, then shuts down
// gracefully (GOAWAY, requests in flight finish) unless Close comes first.
func (l *http3Listener) Serve(ctx context.Context) error {
	secret, err := token.ReadSecretFile(l.s.SecretPath())
	if err != nil {
		return fmt.Errorf("HTTP/3: address-validation secret: %w", err)
	}
	offCfg := l.s.cfg.Offload
	lim := l.s.cfg.Limits
	tcp := l.s.Addr().(*net.TCPAddr)
	var (
		pc  *net.UDPConn
		tr  *quic.Transport
		off *host.Offload
	)
	// The socket and the datapath belong to the interface's namespace.
	err = l.s.inNetns(func() error {
		var err error
		pc, err = net.ListenUDP("udp", &net.UDPAddr{IP: tcp.IP, Port: tcp.Port, Zone: tcp.Zone})
		if err != nil {
			return fmt.Errorf("HTTP/3: listening on UDP port %d: %w", tcp.Port, err)
		}
		tr = &quic.Transport{
			Conn:              pc,
			StatelessResetKey: statelessResetKey(l.s.KeyRing()),
			AddressValidation: &quic.AddressValidationConfig{
				Policy:      l.s.m.quic.Policy(lim.addressPolicy(l.s.RetryMode())),
				TokenSecret: secret,
			},
		}
		lim.applyTransport(tr)
		if offCfg.Mode == host.ModeNone {
			return nil
		}
		// With the agent in front the host still revalidates every
		// token, and its own policy is the fail-open fallback.
		offCfg.KeyRing, offCfg.Logger = l.s.KeyRing(), l.s.Logger()
		if off, err = host.Attach(tr, offCfg); err != nil {
			if offCfg.Mode == host.ModeSplit {
				return fmt.Errorf("HTTP/3: offload split (agent %v): %w", offCfg.AgentControl, err)
			}
			return fmt.Errorf("HTTP/3: offload xdp on %s: %w", offCfg.Iface, err)
		}
		return nil
	})
	if pc != nil {
		defer pc.Close()
	}
	if err != nil {
		return err
	}
	defer tr.Close()
	if off != nil {
		// Deferred after tr.Close, so it runs first: the program detaches
		// before the transport stops taking its deliveries.
		defer off.Close()
	}
	qconf := lim.quicConfig()
	if dir := l.s.cfg.QlogDir; dir != "" {
		qconf.Qlog = quic.QlogDir(dir)
	}
	ln, err := tr.ListenEarly(l.tlsConf, qconf)
	if err != nil {
		return fmt.Errorf("HTTP/3: %w", err)
	}
	srv := &http3.Server{
		Handler:   l.s.Handler(),
		TLSConfig: l.tlsConf,
		Logger:    l.s.Logger(),
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			l.s.m.quicConns.Inc()
			context.AfterFunc(c.Context(), l.s.m.quicConns.Dec)
			l.s.m.quic.ObserveHandshake(c)
			st := c.ConnectionState()
			return WithConnInfo(ctx, ConnInfo{
				RetryValidated: st.ValidatedBy == quic.TokenRetry,
				TokenValidated: st.ValidatedBy == quic.TokenNewToken,
				ZeroRTT:        st.Used0RTT,
			})
		},
	}
	lim.applyHTTP3(srv)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.srv, l.tr, l.off = srv, tr, off
	l.addr = pc.LocalAddr()
	close(l.ready)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.off = nil // closed by the deferred off.Close
		l.mu.Unlock()
	}()

	l.s.Logger().Info("serving HTTP/3", "udp", pc.LocalAddr().String(), "retry", l.s.RetryMode().String(), "offload", offCfg.Mode.String())

	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListener(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http3.ErrServerClosed) {
			return nil // Close came first
		}
		return fmt.Errorf("HTTP/3: %w", err)
	case <-ctx.Done():
	}
	// Close, called by the file server after its shutdown timeout, cuts
	// this short.
	_ = srv.Shutdown(context.Background())
	<-errc
	return nil
}

// Close stops serving at once; it may be called more than once, and
// before Serve.
func (l *http3Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	srv := l.srv
	l.mu.Unlock()
	if srv != nil {
		return srv.Close()
	}
	return nil
}

// statelessResetLabel derives the stateless reset key from the root secret
// (token.KeyRing.ExpandRoot); no other key uses it.
const statelessResetLabel = "turboretry stateless reset"

// statelessResetKey is the key of the server's stateless reset tokens
// (RFC 9000 section 10.3). It comes from the root secret, so a restarted
// server (same secret) derives the tokens its predecessor announced and
// answers the old connections' next packets with a stateless reset: their
// clients give up at once instead of after the idle timeout. A secret
// reloaded with SIGHUP does not change it (the connections alive keep the
// tokens they were given); the next restart does.
func statelessResetKey(kr *token.KeyRing) *quic.StatelessResetKey {
	var k quic.StatelessResetKey
	copy(k[:], kr.ExpandRoot(statelessResetLabel, len(k)))
	return &k
}
