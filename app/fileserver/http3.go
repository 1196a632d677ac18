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
	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// http3Listener serves HTTP/3 with the server's handler and certificate
// on the UDP port of the same number as the TCP listener, which is what
// the Alt-Svc header announces. It is added by New as an ExtraListener.
type http3Listener struct {
	s       *Server
	tlsConf *tls.Config
	ready   chan struct{} // closed once the UDP socket serves

	mu      sync.Mutex
	srv     *http3.Server
	workers *host.Workers // the sockets and their Transports, once ready
	off     *host.Offload // the running offload, or nil
	addr    net.Addr      // the UDP address, once ready
	closed  bool
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
	w, off := l.workers, l.off
	l.mu.Unlock()
	if w == nil {
		return nil
	}
	if off != nil {
		// Agent and host switch together, so each keeps accepting the
		// other's tokens.
		if err := off.SetKeyRing(l.s.KeyRing()); err != nil {
			return err
		}
	}
	var errs []error
	for _, tr := range w.Transports {
		errs = append(errs, tr.SetTokenSecret(secret))
	}
	return errors.Join(errs...)
}

// newHTTP3Listener must run in New: Server.TLSConfig clones the config
// that net/http's ServeTLS modifies when Serve starts (HTTP/2 setup), so
// cloning it from the listener's goroutine would race with that.
func newHTTP3Listener(s *Server) *http3Listener {
	return &http3Listener{s: s, tlsConf: http3.ConfigureTLSConfig(s.TLSConfig()), ready: make(chan struct{})} // h3 only, TLS 1.3
}

// Serve binds the UDP sockets (one per worker, see Config.Workers) and
// serves until ctx ends, then shuts down gracefully (GOAWAY, requests in
// flight finish) unless Close comes first.
func (l *http3Listener) Serve(ctx context.Context) error {
	secret, err := token.ReadSecretFile(l.s.SecretPath())
	if err != nil {
		return fmt.Errorf("HTTP/3: address-validation secret: %w", err)
	}
	offCfg := l.s.cfg.Offload
	lim := l.s.cfg.Limits
	tcp := l.s.Addr().(*net.TCPAddr)
	var (
		w   *host.Workers
		off *host.Offload
	)
	// The sockets and the datapath belong to the interface's namespace.
	err = l.s.inNetns(func() error {
		ids, err := l.s.cfg.ConnectionIDs.codec(l.s.KeyRing())
		if err != nil {
			return fmt.Errorf("HTTP/3: connection IDs: %w", err)
		}
		if in := l.s.cfg.Inherited; in != nil && in.Steering != nil {
			if ids, err = l.inheritedIDs(ids, in.Steering); err != nil {
				return fmt.Errorf("HTTP/3: connection IDs: %w", err)
			}
		}
		rcfg := reuseport.Config{
			Addr:    (&net.UDPAddr{IP: tcp.IP, Port: tcp.Port, Zone: tcp.Zone}).String(),
			Workers: l.s.cfg.Workers,
			IDs:     ids,
			// One socket, not unsteered ones: a migrating client must
			// not land on a worker that does not know it.
			Fallback:    reuseport.FallbackSingle,
			Logger:      l.s.Logger(),
			Restartable: l.s.cfg.Restartable,
		}
		if in := l.s.cfg.Inherited; in != nil && in.Steering != nil {
			w, err = host.JoinWorkers(rcfg, in.Steering)
		} else {
			w, err = host.ListenWorkers(rcfg)
		}
		if err != nil {
			return fmt.Errorf("HTTP/3: listening on UDP port %d: %w", tcp.Port, err)
		}
		// The QUIC limits are server-wide; each worker's Transport
		// enforces its share.
		shared := lim.perWorker(len(w.Transports))
		lim = &shared
		policy := l.s.m.quic.Policy(lim.addressPolicy(l.s.RetryMode()))
		// One replay filter for all workers: a NEW_TOKEN token spent on
		// one must be refused on every other (the DCIDs of two Initials
		// hash to different workers).
		replay, err := token.NewReplayFilter(token.ReplayFilterConfig{Window: token.DefaultNewTokenMaxAge + token.DefaultMaxFuture})
		if err != nil {
			return fmt.Errorf("HTTP/3: %w", err)
		}
		for _, tr := range w.Transports {
			tr.StatelessResetKey = statelessResetKey(l.s.KeyRing())
			tr.AddressValidation = &quic.AddressValidationConfig{Policy: policy, TokenSecret: secret, NewTokenReplay: replay}
			lim.applyTransport(tr)
		}
		if offCfg.Mode == host.ModeNone {
			return nil
		}
		// With the agent in front the host still revalidates every
		// token, and its own policy is the fail-open fallback.
		offCfg.KeyRing, offCfg.Logger, offCfg.IDs = l.s.KeyRing(), l.s.Logger(), ids
		if off, err = host.AttachWorkers(w.Transports, w.WorkerFor, offCfg); err != nil {
			if offCfg.Mode == host.ModeSplit {
				return fmt.Errorf("HTTP/3: offload split (agent %v): %w", offCfg.AgentControl, err)
			}
			return fmt.Errorf("HTTP/3: offload xdp on %s: %w", offCfg.Iface, err)
		}
		return nil
	})
	if err != nil {
		if w != nil {
			w.Close()
		}
		return err
	}
	defer w.Close()
	if off != nil {
		// Deferred after w.Close, so it runs first: the program detaches
		// before the transports stop taking its deliveries.
		defer off.Close()
	}
	qconf := lim.quicConfig()
	if dir := l.s.cfg.QlogDir; dir != "" {
		qconf.Qlog = quic.QlogDir(dir)
	}
	// One TLS configuration and one set of session ticket keys for every
	// worker's handshakes: a ticket issued on one worker resumes, with
	// 0-RTT, on any other (the resumed connection's first Initial hashes
	// anywhere). The listeners clone the configuration they get, and
	// crypto/tls's automatic ticket keys belong to each clone; the clones
	// return this one instead, whose explicit keys rotate in one place.
	shared := l.tlsConf.Clone()
	shared.MinVersion = tls.VersionTLS13
	stopKeys := rotateTicketKeys(shared, ticketKeyRotation)
	defer stopKeys()
	perWorker := l.tlsConf.Clone()
	perWorker.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return shared, nil }
	lns := make([]*quic.EarlyListener, len(w.Transports))
	for i, tr := range w.Transports {
		if lns[i], err = tr.ListenEarly(perWorker, qconf); err != nil {
			return fmt.Errorf("HTTP/3: worker %d: %w", i, err)
		}
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
				RetryValidated:    st.ValidatedBy == quic.TokenRetry,
				TokenValidated:    st.ValidatedBy == quic.TokenNewToken,
				ZeroRTT:           st.Used0RTT,
				HandshakeComplete: c.HandshakeComplete(),
			})
		},
	}
	lim.applyHTTP3(srv)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.srv, l.workers, l.off = srv, w, off
	l.addr = w.Group.LocalAddr()
	if in := l.s.cfg.Inherited; in != nil && in.Steering != nil {
		// A successor: the listeners are up, new connections may come.
		if err := w.Group.Activate(); err != nil {
			l.mu.Unlock()
			return fmt.Errorf("HTTP/3: taking new connections: %w", err)
		}
	}
	close(l.ready)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.off = nil // closed by the deferred off.Close
		l.mu.Unlock()
	}()

	l.s.Logger().Info("serving HTTP/3", "udp", l.addr.String(), "workers", w.Group.Workers(), "steering", w.Group.Mode().String(),
		"generation", w.Group.Generation(),
		"retry", l.s.RetryMode().String(), "offload", offCfg.Mode.String(), "cid_len", w.Transports[0].ConnectionIDGenerator.ConnectionIDLen())
	if lim.PrefixAdmission {
		defer logRefusedPrefixes(l.s.Logger(), w.Transports, refusedPrefixLogInterval)()
	}

	// One server over every worker's listener: requests are handled alike
	// whichever worker holds the connection.
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.ServeListener(ln) }()
	}
	var first error
	select {
	case first = <-errc:
		if errors.Is(first, http3.ErrServerClosed) {
			first = nil // Close came first
		} else if first != nil {
			first = fmt.Errorf("HTTP/3: %w", first)
		}
		_ = srv.Close()
	case <-ctx.Done():
		// Close, called by the file server after its shutdown timeout,
		// cuts this short.
		stopLate := serveLateConns(srv, lns)
		_ = srv.Shutdown(context.Background())
		stopLate()
		<-errc
	}
	for range len(lns) - 1 {
		<-errc
	}
	return first
}

// serveLateConns takes, until the returned function is called (it waits
// for them), the connections lns still hand out once srv's Shutdown has
// stopped taking them, and gives them to srv, which serves them going
// away: their requests are refused with H3_REQUEST_REJECTED, which
// clients retry on a new connection. After a restart these are clients
// whose first Initial came just before the switch and whose handshake
// this process finished after its drain began; their retries go to the
// successor. Left in the listeners' queues, they would wait for an answer
// until their idle timeout.
func serveLateConns(srv *http3.Server, lns []*quic.EarlyListener) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var serving sync.WaitGroup
	for _, ln := range lns {
		serving.Go(func() {
			for {
				qc, err := ln.Accept(ctx)
				if err != nil {
					return
				}
				serving.Go(func() {
					if err := srv.ServeQUICConn(qc); errors.Is(err, http3.ErrServerClosed) {
						// Taken after Close: nothing will serve it.
						_ = qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "server closed")
					}
				})
			}
		})
	}
	return func() {
		cancel()
		serving.Wait()
	}
}

// inheritedIDs returns ids with the MAC key of the program a successor
// joins: a root secret reloaded (SIGHUP) since the first process started
// changes the key derived from it, and IDs under another key would not
// verify in the program. The key changes with a stop and start.
func (l *http3Listener) inheritedIDs(ids *quiclb.Codec, in *reuseport.Inheritance) (*quiclb.Codec, error) {
	key, ok, err := in.MACKey()
	if err != nil {
		return nil, err
	}
	if own, _ := ids.MACKey(); !ok || own == key {
		return ids, nil
	}
	l.s.Logger().Warn("restart: keeping the running process's connection-ID MAC key; the root secret changed since it started, a stop and start adopts the new one")
	lay := l.s.cfg.ConnectionIDs
	return quiclb.NewCodec(quiclb.Config{ConfigID: lay.ConfigID, HostID: lay.HostID, NonceLen: lay.NonceLen, MACKey: &key})
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
