package quic

import (
	"bytes"
	"crypto/tls"
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/streambuf"
	"github.com/turboretry/turboretry/internal/testhook"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
)

// handshakeState is the progress of the TLS handshake and what it brought
// from the peer. Guarded by Conn.mu.
type handshakeState struct {
	tls       *tls.QUICConn // nil until startTLS
	complete  bool          // TLS finished (HandshakeComplete is closed)
	confirmed bool          // RFC 9001 section 4.1.2; Initial and Handshake keys are gone
	sendDone  bool          // server: HANDSHAKE_DONE is due (again, when lost)
	// queuedForAccept (server): the connection went to its listener's
	// accept queue.
	queuedForAccept  bool
	receivedFirst    bool // client: a server packet was processed
	versionRestarted bool // client: restarted after Version Negotiation
	peerParams       *wire.TransportParameters
	peerAckDelayExp  uint8 // the peer's ack_delay_exponent
	// tlsState and postHandshake stand in for tls once it is released: a
	// server's after the handshake (releaseTLS), either side's when the
	// connection closes during the handshake (abandon).
	tlsState      *tls.ConnectionState
	postHandshake *postHandshakeCrypto
	// earlyFlightResends (server) counts onClientInitialProbe's resends.
	earlyFlightResends int
}

func tlsLevel(space int) tls.QUICEncryptionLevel {
	switch space {
	case spaceInitial:
		return tls.QUICEncryptionLevelInitial
	case spaceHandshake:
		return tls.QUICEncryptionLevelHandshake
	}
	return tls.QUICEncryptionLevelApplication
}

func levelSpace(l tls.QUICEncryptionLevel) (int, bool) {
	switch l {
	case tls.QUICEncryptionLevelInitial:
		return spaceInitial, true
	case tls.QUICEncryptionLevelHandshake:
		return spaceHandshake, true
	case tls.QUICEncryptionLevelApplication:
		return spaceApp, true
	}
	return 0, false
}

// tlsError maps a crypto/tls error to a CRYPTO_ERROR carrying its alert.
func tlsError(err error) error {
	code := qerr.CryptoError(80) // internal_error
	var alert tls.AlertError
	if errors.As(err, &alert) {
		code = qerr.CryptoError(uint8(alert))
	}
	// The TLS error stays reachable (errors.As finds a
	// *tls.CertificateVerificationError, as with quic-go).
	return &qerr.TransportError{Code: code, Reason: err.Error(), Err: err}
}

// ourParams returns the transport parameters we send.
func (c *Conn) ourParams() *wire.TransportParameters {
	p := wire.DefaultTransportParameters()
	cfg := c.config
	p.MaxIdleTimeout = cfg.MaxIdleTimeout
	p.InitialMaxData = cfg.InitialConnectionReceiveWindow
	p.InitialMaxStreamDataBidiLocal = cfg.InitialStreamReceiveWindow
	p.InitialMaxStreamDataBidiRemote = cfg.InitialStreamReceiveWindow
	p.InitialMaxStreamDataUni = cfg.InitialStreamReceiveWindow
	p.InitialMaxStreamsBidi = uint64(cfg.MaxIncomingStreams)
	p.InitialMaxStreamsUni = uint64(cfg.MaxIncomingUniStreams)
	p.ActiveConnectionIDLimit = remoteCIDLimit
	p.MaxUDPPayloadSize = receiveBufferSize // larger datagrams would be truncated
	p.InitialSourceConnectionID = c.cids.src
	p.HasInitialSourceConnectionID = true
	p.VersionInformation = c.x.vn.versionInformation(c.version, c.isClient, c.config)
	p.PreferredAddress = c.x.pa.param(c.isClient, c.config)
	if cfg.EnableDatagrams {
		p.MaxDatagramFrameSize = maxDatagramFrameSize
		if n := testhook.MaxDatagramFrameSize; n != 0 {
			p.MaxDatagramFrameSize = n
		}
	}
	p.ResetStreamAt = cfg.EnableStreamResetPartialDelivery
	if !c.isClient {
		p.OriginalDestinationConnectionID = c.cids.origDest
		p.HasOriginalDestinationConnectionID = true
		if c.cids.retrySrc != nil {
			p.RetrySourceConnectionID = c.cids.retrySrc
			p.HasRetrySourceConnectionID = true
		}
		if c.t.StatelessResetKey != nil {
			// The token of sequence 0, the same one the Transport's
			// stateless resets carry for that ID.
			p.StatelessResetToken = c.cids.local.HandshakeResetToken()
			p.HasStatelessResetToken = true
		}
	}
	return &p
}

// startTLS starts the TLS handshake; the client's ClientHello is queued.
func (c *Conn) startTLS() error {
	c.x.pa.issueCID(c.isClient, c.config, c.cids.local)
	qc := &tls.QUICConfig{TLSConfig: c.tlsConf}
	role := PerspectiveServer
	if c.isClient {
		// Session events let the client remember the server's limits with
		// its tickets, for 0-RTT.
		qc.EnableSessionEvents = c.tlsConf.ClientSessionCache != nil
		c.hs.tls = tls.QUICClient(qc)
		role = PerspectiveClient
	} else {
		// Session events let the server check a resumed session's 0-RTT
		// limits (onResumeSession).
		qc.EnableSessionEvents = true
		c.hs.tls = tls.QUICServer(qc)
		// crypto/tls holds the config for the handshake and the server
		// never starts it again: a per-connection clone
		// (withClientHelloConn) goes with crypto/tls (releaseTLS).
		c.tlsConf = nil
	}
	if c.isClient {
		// A server sets its parameters once it has read the client's
		// (QUICTransportParametersRequired): version_information names
		// the version it negotiated from them.
		if err := c.hs.setOurParams(c.ourParams(), role, c.isClient, c.trace); err != nil {
			return err
		}
	}
	if err := c.hs.tls.Start(c.ctx); err != nil {
		return tlsError(err)
	}
	return c.processTLSEvents()
}

// setOurParams hands our transport parameters (ours) to TLS, and records
// them in the trace.
func (hs *handshakeState) setOurParams(ours *wire.TransportParameters, role Perspective, isClient bool, trace *connTracer) error {
	if trace != nil {
		trace.params(isClient, true, ours)
	}
	params, err := ours.Marshal(nil, role)
	if err != nil {
		return err
	}
	hs.tls.SetTransportParameters(params)
	return nil
}

// processTLSEvents applies what crypto/tls asks for until it is idle.
func (c *Conn) processTLSEvents() error {
	for c.hs.tls != nil {
		ev := c.hs.tls.NextEvent()
		switch ev.Kind {
		case tls.QUICNoEvent:
			if !c.isClient {
				// The session ticket went out with the handshake's
				// completion; TLS has nothing more to do for a server.
				c.hs.releaseTLS()
			}
			return nil
		case tls.QUICSetReadSecret:
			if err := c.installKeys(ev, false); err != nil {
				return err
			}
		case tls.QUICSetWriteSecret:
			if err := c.installKeys(ev, true); err != nil {
				return err
			}
		case tls.QUICWriteData:
			if sp, ok := levelSpace(ev.Level); ok {
				c.spaces[sp].crypto.Write(ev.Data)
			}
		case tls.QUICTransportParameters:
			if err := c.handlePeerParams(ev.Data); err != nil {
				return err
			}
		case tls.QUICTransportParametersRequired:
			if c.isClient {
				return qerr.NewTransportError(qerr.InternalError, 0, "transport parameters not set")
			}
			if err := c.hs.setOurParams(c.ourParams(), PerspectiveServer, c.isClient, c.trace); err != nil {
				return err
			}
		case tls.QUICHandshakeDone:
			c.onHandshakeComplete()
		case tls.QUICResumeSession:
			if c.isClient {
				c.onClientResumeSession(ev.SessionState)
			} else {
				c.onResumeSession(ev.SessionState)
			}
		case tls.QUICStoreSession:
			if c.isClient && ev.SessionState != nil {
				c.rememberParams(ev.SessionState)
				if err := c.hs.tls.StoreSession(ev.SessionState); err != nil {
					return tlsError(err)
				}
			}
		case tls.QUICRejectedEarlyData:
			c.early.sealer = nil
			c.early.rejected = true
			c.on0RTTRejected()
		case tls.QUICErrorEvent:
			return tlsError(ev.Err)
		default:
			// Clients enable neither early data nor session events.
		}
	}
	return nil
}

func (c *Conn) installKeys(ev tls.QUICEvent, write bool) error {
	v := handshake.Version(c.version)
	switch ev.Level {
	case tls.QUICEncryptionLevelEarly:
		if !write {
			return c.installEarlyKeys(ev)
		}
		if err := c.installEarlySealer(ev); err != nil {
			return err
		}
		c.early.sent = c.early.sealer != nil
	case tls.QUICEncryptionLevelHandshake:
		sp := &c.spaces[spaceHandshake]
		if c.trace != nil {
			c.trace.connState(qlog.ConnectionStateHandshakeStarted)
		}
		if write {
			s, err := handshake.NewSealer(ev.Suite, ev.Data, v)
			if err != nil {
				return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
			}
			sp.sealer = s
			c.loss.rec.SetHandshakeKeys(time.Now())
		} else {
			o, err := handshake.NewOpener(ev.Suite, ev.Data, v)
			if err != nil {
				return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
			}
			sp.opener = o
			c.keys.retryLater = true
		}
	case tls.QUICEncryptionLevelApplication:
		if c.keys.app == nil {
			k, err := handshake.NewAppKeys(ev.Suite, v)
			if err != nil {
				return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
			}
			c.keys.app = k
		}
		var err error
		if write {
			err = c.keys.app.SetSendSecret(ev.Data)
		} else {
			err = c.keys.app.SetRecvSecret(ev.Data)
			c.keys.retryLater = true
		}
		if err != nil {
			return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
		}
		if write && !c.isClient {
			c.queueForAccept(true)
		}
	}
	return nil
}

func (c *Conn) handlePeerParams(data []byte) error {
	role := PerspectiveClient
	if c.isClient {
		role = PerspectiveServer
	}
	var p wire.TransportParameters
	if err := p.Unmarshal(data, role); err != nil {
		return err
	}
	tpErr := func(msg string) error { return qerr.NewTransportParameterError(msg) }
	if !p.HasInitialSourceConnectionID || !bytes.Equal(p.InitialSourceConnectionID, c.cids.dest) {
		return tpErr("initial_source_connection_id mismatch")
	}
	if c.isClient {
		if !p.HasOriginalDestinationConnectionID || !bytes.Equal(p.OriginalDestinationConnectionID, c.cids.origDest) {
			return tpErr("original_destination_connection_id mismatch")
		}
		if c.cids.retrySrc != nil {
			if !p.HasRetrySourceConnectionID || !bytes.Equal(p.RetrySourceConnectionID, c.cids.retrySrc) {
				return tpErr("retry_source_connection_id mismatch")
			}
		} else if p.HasRetrySourceConnectionID {
			return tpErr("retry_source_connection_id without Retry")
		}
	}
	if err := c.x.vn.negotiate(&p, c.isClient, &c.version, &c.spaces[spaceInitial], c.cids.clientDest, c.hs.versionRestarted, c.config); err != nil {
		return err
	}
	c.hs.peerParams = &p
	if c.trace != nil {
		c.trace.params(c.isClient, false, &p)
	}
	c.hs.peerAckDelayExp = p.AckDelayExponent
	c.loss.rec.SetMaxAckDelay(p.MaxAckDelay)
	if c.early.sent {
		if err := c.applyParamsAfterEarly(&p); err != nil {
			return err
		}
	} else {
		c.flow.send.Init(p.InitialMaxData)
		if err := c.streams.counts.SetPeerLimits(p.InitialMaxStreamsBidi, p.InitialMaxStreamsUni); err != nil {
			return flowError(err)
		}
	}
	c.datagrams.peerSupports = p.MaxDatagramFrameSize > 0
	c.datagrams.peerMax = p.MaxDatagramFrameSize
	if err := c.cids.initRemote(&p, c.t, c); err != nil {
		return err
	}
	c.wake() // the IDs issued up to the peer's limit go out
	return c.x.pa.onPeer(&p, c.isClient, c.cids.remote)
}

func (c *Conn) onHandshakeComplete() {
	if c.hs.complete {
		return
	}
	c.hs.complete = true
	// The idle timeout in force changes from the handshake's to the
	// negotiated one; the PTO backoff stops short of it.
	c.loss.rec.SetIdleTimeout(c.idle.timeout(c.config, &c.hs, &c.loss))
	if c.trace != nil {
		c.trace.connState(qlog.ConnectionStateHandshakeComplete)
	}
	c.stats.noteHandshakeComplete(time.Now())
	if c.isClient {
		c.early.used = c.early.sent && !c.early.rejected
		c.early.sealer = nil
	}
	close(c.handshakeDoneCh)
	if !c.isClient {
		// The server's handshake is confirmed at completion (RFC 9001 4.1.2).
		c.hs.sendDone = true
		c.confirmHandshake(time.Now())
		if c.server != nil && c.server.tokens != nil {
			// RFC 9000 section 8.1.3: a token for the client's next
			// connection, bound to its address.
			if c.tokens.issued = c.server.tokens.mintNewToken(c.path.remote); c.tokens.issued != nil {
				c.tokens.sendIssued = true
			}
		}
		// A session ticket for resumption; errors (tickets disabled) are harmless.
		if err := c.hs.tls.SendSessionTicket(c.ticketOptions()); err == nil {
			_ = c.processTLSEvents()
		}
		c.admit.handshakeSlotDone(c.server)
		c.queueForAccept(false)
	}
}

func (c *Conn) confirmHandshake(now time.Time) {
	if c.hs.confirmed {
		return
	}
	c.hs.confirmed = true
	if c.trace != nil {
		c.trace.connState(qlog.ConnectionStateHandshakeConfirmed)
	}
	c.early.opener = nil // RFC 9001 section 4.9.3
	c.loss.rec.SetHandshakeConfirmed(now)
	c.mtu.start(now, c.hs.peerParams, mtuEnabled(c.config, c.t), c.baseDatagram, c.loss.pto())
	c.dropSpace(spaceInitial, now)
	c.dropSpace(spaceHandshake, now)
}

// dropSpace discards the keys and state of the Initial or Handshake space.
func (c *Conn) dropSpace(space int, now time.Time) {
	sp := &c.spaces[space]
	if sp.discarded {
		return
	}
	sp.discarded = true
	sp.sealer, sp.opener = nil, nil
	sp.crypto.Reset() // gives the chunks back
	sp.crypto = streambuf.SendBuffer{}
	if sp.cryptoIn != nil {
		sp.cryptoIn.Release()
	}
	sp.probes = 0
	_ = c.loss.rec.DiscardSpace(protocol.PacketNumberSpace(space), now)
	for h, p := range c.loss.sent.all() {
		if p.space == space {
			c.loss.sent.remove(h)
		}
	}
}

var errNoALPN = errors.New("quic: a server's tls.Config must offer an application protocol (NextProtos, or GetConfigForClient)")
