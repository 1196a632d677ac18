package quic

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"sync"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
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

	mu   sync.Mutex
	load serverLoad // the listener's limits in use (server_limits.go)

	validator addressValidator // guarded by t.mu
	tokens    *tokenValidator  // set when Transport.AddressValidation is
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

// addressValidator decides what to do with a connection-creating Initial.
type addressValidator func(hdr *wire.LongHeader, remote net.Addr) initialDecision

// ListenAddr listens for QUIC connections on a new UDP socket bound to addr.
// Closing the listener closes the socket and all its connections.
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
	if len(tlsConf.NextProtos) == 0 {
		return errNoALPN
	}
	return nil
}

func (t *Transport) listen(tlsConf *tls.Config, config *Config, early bool) (*baseServer, error) {
	if err := checkTLSConfig(tlsConf); err != nil {
		return nil, err
	}
	conf, err := populateConfig(config)
	if err != nil {
		return nil, err
	}
	if err := t.init(); err != nil {
		return nil, err
	}
	if err := checkPreferredAddressSocket(conf.PreferredAddress, t.Conn.LocalAddr()); err != nil {
		return nil, err
	}
	tc := tlsConf.Clone()
	tc.MinVersion = tls.VersionTLS13
	s := &baseServer{
		t:        t,
		tlsConf:  tc,
		config:   conf,
		early:    early,
		acceptCh: make(chan *Conn, acceptQueueCap(conf)),
		closed:   make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrTransportClosed
	}
	if t.server != nil {
		return nil, errors.New("quic: Transport already has a listener")
	}
	if t.AddressValidation != nil {
		v, err := newTokenValidator(t.AddressValidation, s)
		if err != nil {
			return nil, err
		}
		s.tokens = v
		s.validator = v.decide
		t.avMetrics = v.m
	}
	t.server = s
	return s, nil
}

// Accept returns the next connection.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) { return l.s.accept(ctx) }

// Addr returns the local address.
func (l *Listener) Addr() net.Addr { return l.s.t.Conn.LocalAddr() }

// Close stops accepting connections; for ListenAddr it also closes the
// socket and every connection.
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
		return nil, ErrServerClosed
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
	s.closeLocked()
	if t.isSingleUse {
		return t.Close()
	}
	return nil
}

// closeLocked stops the server and refuses the connections not yet accepted.
func (s *baseServer) closeLocked() {
	s.closeOnce.Do(func() {
		close(s.closed)
		for {
			select {
			case c := <-s.acceptCh:
				_ = c.CloseWithError(0, "server closed")
			default:
				return
			}
		}
	})
}

// decideInitial is the address-validation hook: it runs on a client Initial
// that would create a connection, before any connection state exists.
// Without a validator (Transport.AddressValidation nil) every Initial is
// accepted; with one, tokenValidator.decide checks universal tokens and
// asks the AddressPolicy.
func (s *baseServer) decideInitial(hdr *wire.LongHeader, remote net.Addr) initialDecision {
	s.t.mu.Lock()
	v := s.validator
	s.t.mu.Unlock()
	if v == nil {
		return initialDecision{action: initialAccept}
	}
	return v(hdr, remote)
}

// setValidator installs the address-validation hook.
func (s *baseServer) setValidator(v addressValidator) {
	s.t.mu.Lock()
	s.validator = v
	s.t.mu.Unlock()
}

// sendRetry answers a client Initial with a Retry carrying token
// (RFC 9000 section 17.2.5), without creating any state.
func (s *baseServer) sendRetry(hdr *wire.LongHeader, remote net.Addr, token, scid []byte) {
	if len(token) == 0 {
		return
	}
	if scid == nil {
		scid = s.t.newConnID()
	}
	if len(scid) == 0 {
		scid = make([]byte, defaultConnIDLength)
		_, _ = rand.Read(scid)
	}
	// The write is synchronous, so a pooled buffer can take the packet.
	buf := getBuffer()
	defer putBuffer(buf)
	b := wire.AppendRetry((*buf)[:0], hdr.Version, hdr.SrcConnID, scid, token)
	b, err := handshake.AppendRetryIntegrityTag(b, handshake.Version(hdr.Version), hdr.DestConnID)
	if err != nil {
		return
	}
	s.t.write(b, remote)
}

// handleUnknownLongHeader handles a long-header datagram whose DCID matches
// no connection: Version Negotiation, or a new connection.
func (s *baseServer) handleUnknownLongHeader(p receivedPacket) {
	defer func() {
		if p.buf != nil {
			putBuffer(p.buf)
		}
	}()
	var ih wire.InvariantHeader
	if err := wire.ParseInvariantHeader(p.data, &ih); err != nil {
		s.t.countDropped(DropMalformed)
		return
	}
	if !s.supports(ih.Version) {
		if len(p.data) >= minInitialSize && ih.Version != 0 {
			vs := make([]wire.Version, len(s.config.Versions))
			for i, v := range s.config.Versions {
				vs[i] = wire.Version(v)
			}
			s.t.write(wire.AppendVersionNegotiation(nil, ih.DestConnID, ih.SrcConnID, vs), p.remote)
		}
		return
	}
	var hdr wire.LongHeader
	if err := wire.ParseLongHeader(p.data, &hdr); err != nil {
		s.t.countDropped(DropMalformed)
		return
	}
	if hdr.Type != wire.PacketTypeInitial {
		s.t.countDropped(DropUnknownConnection)
		return
	}
	// RFC 9000 sections 14.1 and 7.2. After a Retry the DCID is the
	// server's choice, which may be shorter; the token vouches for it.
	if len(p.data) < minInitialSize || (len(hdr.DestConnID) < 8 && len(hdr.Token) == 0) {
		s.t.countDropped(DropInitialTooSmall)
		return
	}
	// The listener's limits come first: a client that would be refused
	// anyway learns it at once, not after a Retry round trip.
	if r, full := s.overLimit(); full {
		s.t.countRefused(r)
		s.sendStatelessClose(&hdr, p.remote, ConnectionRefused)
		return
	}
	dec := s.decideInitial(&hdr, p.remote)
	switch dec.action {
	case initialAccept:
	case initialRetry:
		s.sendRetry(&hdr, p.remote, dec.retryToken, dec.retrySCID)
		return
	case initialInvalidToken:
		s.sendInvalidToken(&hdr, p.remote)
		return
	default:
		return
	}
	// Only an Initial that decrypts creates state: garbage after a valid
	// header is dropped here (on a copy; decryption works in place).
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
	c, err := s.newConn(&hdr, p.remote, sealer, opener, &dec)
	if err != nil {
		return
	}
	c.deliver(p)
	p.buf = nil
}

func (s *baseServer) supports(v wire.Version) bool {
	for _, ours := range s.config.Versions {
		if wire.Version(ours) == v {
			return true
		}
	}
	return false
}

// newConn creates and starts the connection for a client's first Initial.
func (s *baseServer) newConn(hdr *wire.LongHeader, remote net.Addr, sealer *handshake.Sealer, opener *handshake.Opener, dec *initialDecision) (*Conn, error) {
	t := s.t
	c := newConn(t, false, s.config, s.tlsConf, hdr.Version, remote)
	c.server = s
	c.clientDestCID = append([]byte(nil), hdr.DestConnID...)
	c.origDestCID = c.clientDestCID
	c.addressValidated = dec.validated
	c.validatedBy = dec.validatedBy
	if dec.odcid != nil {
		// After a Retry the client's Initials go to the Retry's SCID
		// (hdr.DestConnID); its first DCID was odcid.
		c.origDestCID = append([]byte(nil), dec.odcid...)
		c.retrySrcCID = append([]byte(nil), dec.rscid...)
	}
	c.destCID = append([]byte(nil), hdr.SrcConnID...)
	c.spaces[spaceInitial].sealer = sealer
	c.spaces[spaceInitial].opener = opener
	if !t.addHandler(c.clientDestCID, c) {
		t.countRefused(RefusedCIDInUse)
		return nil, errors.New("quic: connection ID in use")
	}
	s.admit(c, dec.validated)
	if err := c.initLocalCIDs(); err != nil {
		t.countRefused(RefusedStartFailed)
		t.removeHandlers(c)
		c.releaseServerSlots()
		return nil, err
	}
	c.startQlog()
	if err := c.startTLS(); err != nil {
		t.countRefused(RefusedStartFailed)
		if c.qlog != nil {
			c.closeErr = err
			c.qlogClosed()
		}
		t.removeHandlers(c)
		c.releaseServerSlots()
		if c.tls != nil {
			c.tls.Close()
		}
		return nil, err
	}
	t.startConn(c)
	return c, nil
}

// queueForAccept hands a server connection to Accept: an EarlyListener's
// once 1-RTT keys exist (early), a Listener's at handshake completion.
// Handing it out ends none of the limits it holds (server_limits.go).
func (c *Conn) queueForAccept(early bool) {
	s := c.server
	if s == nil || c.queuedForAccept || early != s.early {
		return
	}
	c.queuedForAccept = true
	select {
	case <-s.closed:
		c.t.countRefused(RefusedServerClosed)
		c.closeLocal(&TransportError{ErrorCode: ConnectionRefused, ErrorMessage: "server closed"})
		return
	default:
	}
	select {
	case s.acceptCh <- c:
	default:
		c.t.countRefused(RefusedAcceptQueueFull)
		c.closeLocal(&TransportError{ErrorCode: ConnectionRefused, ErrorMessage: "accept queue full"})
	}
}
