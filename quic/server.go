package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// baseServer is the server side of a Transport, shared by Listener and
// EarlyListener.
type baseServer struct {
	t       *Transport
	tlsConf *tls.Config
	config  *Config
	early   bool

	acceptCh  chan *Conn
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error // what Accept returns once closed and drained

	mu   sync.Mutex
	load serverLoad // the listener's limits in use (server_limits.go)
	// prefixes is the admission by source prefix (Config.Admission, nil
	// when off; listener_admission.go), guarded by mu.
	prefixes *prefixAdmission
	// pending are the connections not handed to Accept yet: Close refuses
	// them.
	pending map[*Conn]struct{}

	early0RTT earlyQueue // 0-RTT datagrams ahead of their Initial (Allow0RTT)
	// tokens is the address validation (Transport.AddressValidation, or
	// quic-go's default), set before the listener is registered.
	tokens *tokenValidator
	// responder applies the stateless rules the offload agent applies too
	// (internal/stateless): Version Negotiation, which Initials may open a
	// connection, the Retry and stateless close packets.
	responder *stateless.Responder
	// refusals holds the CONNECTION_REFUSED closes sent last, so an
	// attempt's later Initials are refused without sealing again
	// (refusal_closes.go).
	refusals refusalCloses
}

// Listener accepts QUIC connections once their handshake completed.
type Listener struct{ s *baseServer }

// EarlyListener accepts QUIC connections as soon as the server can send
// 1-RTT data (0.5-RTT), before the client's Finished arrived.
type EarlyListener struct{ s *baseServer }

// initialAction is the address-validation verdict on a client Initial
// that would create a connection.
type initialAction uint8

const (
	initialAccept initialAction = iota // create the connection
	initialRetry                       // answer with a Retry (stateless)
	initialDrop                        // ignore the packet
	// initialInvalidToken closes the attempt with INVALID_TOKEN (a bad
	// retry token, RFC 9000 section 8.1.3), statelessly.
	initialInvalidToken
)

// initialDecision is what the address-validation hook decided.
type initialDecision struct {
	action initialAction
	// retryToken is the token a Retry carries (initialRetry).
	retryToken []byte
	// retrySCID is the Retry's SCID that retryToken binds; nil picks one.
	retrySCID []byte
	// validated (initialAccept) says the token proved the client's
	// address, which lifts the amplification limit. odcid and rscid, when
	// the token came from a Retry (ours or an offload agent's), are the
	// client's original destination connection ID and the Retry's source
	// connection ID, for the transport parameters the client checks.
	validated    bool
	odcid, rscid []byte
	// validatedBy is the kind of token that validated the address.
	validatedBy TokenKind
}

// retryRoom is the caller's room for what a Retry decision points to,
// its token and SCID, so that deciding on an Initial does not allocate.
type retryRoom struct {
	token [token.MaxTokenLen]byte
	scid  [wire.MaxConnIDLen]byte
}

// ListenAddr listens for QUIC connections on a new UDP socket bound to addr.
// Closing the listener stops accepting; the socket closes once its last
// connection is gone (as in quic-go).
func ListenAddr(addr string, tlsConf *tls.Config, config *Config) (*Listener, error) {
	s, err := listenAddr(addr, tlsConf, config, false)
	if err != nil {
		return nil, err
	}
	return &Listener{s}, nil
}

// ListenAddrEarly is ListenAddr returning an EarlyListener.
func ListenAddrEarly(addr string, tlsConf *tls.Config, config *Config) (*EarlyListener, error) {
	s, err := listenAddr(addr, tlsConf, config, true)
	if err != nil {
		return nil, err
	}
	return &EarlyListener{s}, nil
}

func listenAddr(addr string, tlsConf *tls.Config, config *Config, early bool) (*baseServer, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	t := &Transport{Conn: conn, createdConn: true, isSingleUse: true}
	s, err := t.listen(tlsConf, config, early)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

// Listen listens for QUIC connections on conn, which the listener does not
// close.
func Listen(conn net.PacketConn, tlsConf *tls.Config, config *Config) (*Listener, error) {
	t := &Transport{Conn: conn, isSingleUse: true}
	s, err := t.listen(tlsConf, config, false)
	if err != nil {
		return nil, err
	}
	return &Listener{s}, nil
}

// ListenEarly is Listen returning an EarlyListener.
func ListenEarly(conn net.PacketConn, tlsConf *tls.Config, config *Config) (*EarlyListener, error) {
	t := &Transport{Conn: conn, isSingleUse: true}
	s, err := t.listen(tlsConf, config, true)
	if err != nil {
		return nil, err
	}
	return &EarlyListener{s}, nil
}

// Listen starts accepting connections on the Transport; one listener at a
// time.
func (t *Transport) Listen(tlsConf *tls.Config, config *Config) (*Listener, error) {
	s, err := t.listen(tlsConf, config, false)
	if err != nil {
		return nil, err
	}
	return &Listener{s}, nil
}

// ListenEarly is Listen returning an EarlyListener.
func (t *Transport) ListenEarly(tlsConf *tls.Config, config *Config) (*EarlyListener, error) {
	s, err := t.listen(tlsConf, config, true)
	if err != nil {
		return nil, err
	}
	return &EarlyListener{s}, nil
}

func checkTLSConfig(tlsConf *tls.Config) error {
	if tlsConf == nil {
		return errors.New("quic: tls.Config not set")
	}
	return nil
}

func (t *Transport) listen(tlsConf *tls.Config, config *Config, early bool) (*baseServer, error) {
	if err := checkTLSConfig(tlsConf); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.closedErr()
	}
	// A server must offer an application protocol (QUIC requires ALPN),
	// in its base config or in those GetConfigForClient returns.
	if len(tlsConf.NextProtos) == 0 && tlsConf.GetConfigForClient == nil {
		return nil, errNoALPN
	}
	conf, err := populateConfig(config)
	if err != nil {
		return nil, err
	}
	responder, err := stateless.New(conf.Versions)
	if err != nil {
		return nil, fmt.Errorf("quic: Config.Versions: %w", err)
	}
	// Each connection gets a clone of the application's config, made when
	// it starts (serverTLSConfig), so later changes to the config apply to
	// later connections, as in quic-go. crypto/tls makes a config's
	// automatic session ticket keys on first use, and a clone made before
	// that gets keys of its own: tickets would not survive between clones,
	// nor decrypt where the application's WrapSession encrypts with its own
	// config. Asking the application's config to decrypt nothing makes its
	// keys now, so every clone shares them (golang.org/issue/60506).
	_, _ = tlsConf.DecryptTicket(nil, tls.ConnectionState{})
	s := &baseServer{
		t:         t,
		tlsConf:   tlsConf,
		config:    conf,
		early:     early,
		acceptCh:  make(chan *Conn, acceptQueueCap(conf)),
		closed:    make(chan struct{}),
		responder: responder,
		prefixes:  newPrefixAdmission(conf.Admission),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		if t.closeErr != nil {
			return nil, t.closeErr
		}
		return nil, ErrTransportClosed
	}
	if t.server != nil {
		return nil, errors.New("quic: Transport already has a listener")
	}
	// The read loop starts here, if it has not yet; mu, held until the
	// listener is registered, keeps it from taking a client's Initial
	// that was waiting in the socket for one of an unknown connection.
	if err := t.init(); err != nil {
		return nil, err
	}
	if err := checkPreferredAddressSocket(conf.PreferredAddress, t.Conn.LocalAddr()); err != nil {
		return nil, err
	}
	av := t.AddressValidation
	if av == nil {
		av = t.defaultAddressValidation(conf)
	}
	{
		v, err := newTokenValidator(av, s)
		if err != nil {
			return nil, err
		}
		s.tokens = v
		t.avMetrics = v.m
	}
	t.server = s
	return s, nil
}

// Accept returns the next connection.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) { return l.s.accept(ctx) }

// Addr returns the local address.
func (l *Listener) Addr() net.Addr { return l.s.t.Conn.LocalAddr() }

// Close stops accepting connections, as quic-go's: Accept still returns
// the connections already queued, then ErrServerClosed; handshakes in
// progress are refused with CONNECTION_REFUSED; accepted connections are
// not affected. The Transport of Listen and ListenAddr (and ListenAddr's
// socket) closes once its last connection closed.
func (l *Listener) Close() error { return l.s.close() }

// Accept returns the next connection.
func (l *EarlyListener) Accept(ctx context.Context) (*Conn, error) { return l.s.accept(ctx) }

// Addr returns the local address.
func (l *EarlyListener) Addr() net.Addr { return l.s.t.Conn.LocalAddr() }

// Close stops accepting connections; see Listener.Close.
func (l *EarlyListener) Close() error { return l.s.close() }

func (s *baseServer) accept(ctx context.Context) (*Conn, error) {
	select {
	case c := <-s.acceptCh:
		return c, nil
	case <-s.closed:
		// After Close the connections already queued are still handed
		// out, as in quic-go; then ErrServerClosed.
		select {
		case c := <-s.acceptCh:
			return c, nil
		default:
		}
		return nil, s.closeErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *baseServer) close() error {
	t := s.t
	t.mu.Lock()
	if t.server == s {
		t.server = nil
	}
	t.mu.Unlock()
	s.closeLocked(ErrServerClosed)
	if t.isSingleUse {
		// The Transport of Listen or ListenAddr goes once its last
		// connection does (connDone), as in quic-go: accepted and queued
		// connections stay usable.
		t.mu.Lock()
		idle := len(t.handlers) == 0
		t.mu.Unlock()
		if idle {
			return t.Close()
		}
	}
	return nil
}

// closeLocked stops the server: handshakes still in progress are refused
// with CONNECTION_REFUSED when they complete (queueForAccept); connections
// already queued stay for Accept.
func (s *baseServer) closeLocked(err error) {
	s.closeOnce.Do(func() {
		s.closeErr = err
		close(s.closed)
		s.early0RTT.clear()
		// Handshakes in progress are refused now, as in quic-go (not only
		// when they complete): each connection checks before it sends
		// (refuseIfServerClosed), so no more of its handshake goes out, and
		// the client sees CONNECTION_REFUSED.
		s.mu.Lock()
		pending := make([]*Conn, 0, len(s.pending))
		for c := range s.pending {
			pending = append(pending, c)
		}
		s.mu.Unlock()
		for _, c := range pending {
			c.wake()
		}
	})
}

// notPending forgets c as a connection Close would refuse.
func (s *baseServer) notPending(c *Conn) {
	s.mu.Lock()
	delete(s.pending, c)
	s.mu.Unlock()
}

// decideInitial is the address-validation hook: it runs on a client Initial
// that would create a connection, before any connection state exists.
// tokenValidator.decide checks universal tokens and asks the AddressPolicy;
// a server without one (tests) accepts every Initial. The Retry decision's
// token and SCID are in room.
func (s *baseServer) decideInitial(hdr *wire.LongHeader, from netip.AddrPort, remote net.Addr, room *retryRoom) initialDecision {
	if s.tokens == nil {
		return initialDecision{action: initialAccept}
	}
	// A concrete method, not a func value: escape analysis follows it,
	// so the caller's header and room stay on its stack.
	return s.tokens.decide(hdr, from, remote, room)
}

// sendRetry answers a client Initial with a Retry carrying token
// (RFC 9000 section 17.2.5), without creating any state; scid is the
// Retry's SCID, which the token binds, and buf takes the packet.
func (s *baseServer) sendRetry(hdr *wire.LongHeader, to *receivedPacket, token, scid, buf []byte) {
	b, err := s.responder.AppendRetry(buf, hdr, scid, token)
	if err != nil {
		return
	}
	s.t.replyTo(to, b)
}

// handleUnknownLongHeader handles a long-header datagram whose DCID matches
// no connection: Version Negotiation, or a new connection.
func (s *baseServer) handleUnknownLongHeader(p receivedPacket) {
	defer func() {
		if p.buf != nil {
			putBuffer(p.buf)
		}
	}()
	// The stateless answers are written synchronously, so a pooled buffer
	// takes them.
	out := getBuffer()
	defer putBuffer(out)
	var hdr wire.LongHeader
	switch o, reply := s.responder.Examine(p.data, &hdr, (*out)[:0]); o {
	case stateless.Initial:
	case stateless.VersionNegotiation:
		if s.t.DisableVersionNegotiationPackets {
			s.t.countDropped(DropUnsupportedVersion, len(p.data))
			return
		}
		s.t.replyTo(&p, reply)
		var ih wire.InvariantHeader
		if s.t.Tracer != nil && wire.ParseInvariantHeader(p.data, &ih) == nil {
			s.t.traceVersionNegotiation(ih.SrcConnID, ih.DestConnID, s.responder.Versions(nil))
		}
		return
	case stateless.Malformed, stateless.ConnIDTooLong:
		s.t.countDropped(DropMalformed, len(p.data))
		return
	case stateless.VersionNegotiationPacket, stateless.UnsupportedTooSmall:
		s.t.countDropped(DropUnsupportedVersion, len(p.data))
		return
	case stateless.NotInitial:
		if hdr.Type == wire.PacketType0RTT && s.config.Allow0RTT && s.early0RTT.add(hdr.DestConnID, p, rcvTimeOf(p)) {
			p.buf = nil // the queue's now
			return
		}
		s.t.countDropped(DropUnknownConnection, len(p.data))
		return
	case stateless.InitialTooSmall, stateless.DCIDTooShort:
		// RFC 9000 sections 14.1 and 7.2. After a Retry the DCID is the
		// server's choice, which may be shorter; the token vouches for it.
		s.t.countDropped(DropInitialTooSmall, len(p.data))
		return
	default:
		s.t.countDropped(DropUnknownConnection, len(p.data))
		return
	}
	// The listener's limits come first: a client that would be refused
	// anyway learns it at once, not after a Retry round trip. Only one
	// with a token may still be a returning client, for which the part
	// of the limits reserved for them counts (Config.Admission): its
	// token is checked first.
	from := p.sender()
	r, full := s.checkAdmission(from, false)
	if full && (len(hdr.Token) == 0 || s.prefixes == nil) {
		s.refuseInitial(r, &hdr, &p, (*out)[:0])
		return
	}
	var room retryRoom
	dec := s.decideInitial(&hdr, from, p.remote, &room)
	if full {
		if dec.action != initialAccept || dec.validatedBy != TokenNewToken {
			s.refuseInitial(r, &hdr, &p, (*out)[:0])
			return
		}
		if r, full := s.checkAdmission(from, true); full {
			s.refuseInitial(r, &hdr, &p, (*out)[:0])
			return
		}
	}
	switch dec.action {
	case initialAccept, initialInvalidToken:
	case initialRetry:
		// Stateless and cheaper than the trial decryption below, which a
		// flood of Initials would make us pay: a Retry answers before it.
		// One for a corrupted Initial costs the client a round trip at
		// most (it takes a Retry only before the server's Initial, and
		// only if the integrity tag over its own DCID checks).
		s.sendRetry(&hdr, &p, dec.retryToken, dec.retrySCID, (*out)[:0])
		return
	default:
		return
	}
	// Only an Initial that decrypts creates state, or ends the attempt
	// for a bad retry token: RFC 9000 section 8.1.3 closes when the
	// Initial is otherwise valid. Garbage after a valid header is dropped
	// here (decrypted on a copy: decryption works in place), and so is a
	// client Initial that a flipped bit on the way turned into one with a
	// token (a token length read from another byte); a close for that one
	// would end the handshake of a client that gets it under its own
	// connection IDs, and be one more server Initial in a trace.
	sealer, opener, err := handshake.NewInitialKeys(hdr.DestConnID, handshake.Version(hdr.Version), false)
	if err != nil {
		return
	}
	trial := getBuffer()
	defer putBuffer(trial)
	pkt := append((*trial)[:0], p.data[:hdr.PacketLen]...)
	if _, _, err := opener.UnprotectPacket(pkt, hdr.PNOffset, -1); err != nil {
		s.t.countRefused(RefusedUndecryptable)
		return
	}
	if dec.action == initialInvalidToken {
		if m := s.avMetrics(); m != nil {
			m.invalidToken.Inc()
		}
		s.sendStatelessClose(&hdr, &p, InvalidToken, (*out)[:0])
		return
	}
	// The first allocation for this sender: its Initial decrypted.
	remote := p.remoteAddr()
	ctx, conf, err := s.connectionFor(remote, dec.validated)
	if err != nil {
		s.t.countRefused(RefusedByApplication)
		s.sendStatelessClose(&hdr, &p, ConnectionRefused, (*out)[:0])
		return
	}
	c, err := s.newConn(ctx, conf, &hdr, remote, sealer, opener, &dec)
	if err != nil {
		return
	}
	// hdr points into p's buffer, which is the connection's once delivered.
	early := s.early0RTT.take(hdr.DestConnID, rcvTimeOf(p))
	c.deliver(p)
	p.buf = nil
	for _, q := range early {
		c.deliver(q)
	}
}

// newConn creates and starts the connection for a client's first Initial.
func (s *baseServer) newConn(ctx context.Context, conf *Config, hdr *wire.LongHeader, remote net.Addr, sealer *handshake.Sealer, opener *handshake.Opener, dec *initialDecision) (*Conn, error) {
	t := s.t
	c := newConn(ctx, t, false, conf, serverTLSConfig(s.tlsConf, t.Conn.LocalAddr(), remote), hdr.Version, remote)
	c.server = s
	c.cids.clientDest = append([]byte(nil), hdr.DestConnID...)
	c.cids.origDest = c.cids.clientDest
	c.admit.validated = dec.validated
	c.admit.validatedBy = dec.validatedBy
	if dec.odcid != nil {
		// After a Retry the client's Initials go to the Retry's SCID
		// (hdr.DestConnID); its first DCID was odcid.
		c.cids.origDest = append([]byte(nil), dec.odcid...)
		c.cids.retrySrc = append([]byte(nil), dec.rscid...)
	}
	c.cids.dest = append([]byte(nil), hdr.SrcConnID...)
	c.spaces[spaceInitial].sealer = sealer
	c.spaces[spaceInitial].opener = opener
	if !t.addHandler(c.cids.clientDest, c) {
		t.countRefused(RefusedCIDInUse)
		return nil, errors.New("quic: connection ID in use")
	}
	c.out.routed(t, c.cids.clientDest)
	s.admit(c, remote, dec.validated)
	if err := c.cids.initLocal(c.t, c, &c.out, &c.path); err != nil {
		t.countRefused(RefusedStartFailed)
		t.removeHandlers(c)
		c.admit.release(c.server, c)
		return nil, err
	}
	c.startRecorders()
	if err := c.startTLS(); err != nil {
		t.countRefused(RefusedStartFailed)
		c.close.err = err
		c.trace.end(c.close.err)
		c.trace = nil
		c.mu.Lock()
		c.unlockAndDeliver()
		t.removeHandlers(c)
		c.admit.release(c.server, c)
		if c.hs.tls != nil {
			c.hs.tls.Close()
		}
		return nil, err
	}
	c.mu.Lock()
	c.unlockAndDeliver() // run is not going yet
	t.startConn(c)
	return c, nil
}
