package quic

import (
	"bytes"
	"crypto/rand"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/ackgen"
	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

// A client's answers to the two packets a server sends before any
// connection state of its own: a Retry (the server wants its address
// proven with a token) and a Version Negotiation (it speaks none of the
// versions offered). Both make the client start its attempt over.

// handleRetry processes a Retry packet (RFC 9000 section 17.2.5.2).
func (c *Conn) handleRetry(pkt []byte, hdr *wire.LongHeader) {
	if c.hs.receivedFirst || c.cids.retrySrc != nil || len(hdr.Token) == 0 {
		return
	}
	if !bytes.Equal(hdr.DestConnID, c.cids.src) {
		return
	}
	if err := handshake.VerifyRetryIntegrityTag(pkt, handshake.Version(c.version), c.cids.origDest); err != nil {
		return
	}
	c.cids.retrySrc = slices.Clone(hdr.SrcConnID)
	c.cids.dest = c.cids.retrySrc
	c.tokens.initial = slices.Clone(hdr.Token)
	s, o, err := handshake.NewInitialKeys(c.cids.dest, handshake.Version(c.version), true)
	if err != nil {
		c.closeWithError(err)
		return
	}
	sp := &c.spaces[spaceInitial]
	sp.sealer, sp.opener = s, o
	sp.requeueCrypto()
	// The server processed nothing we sent: our 0-RTT data goes again, in
	// new 0-RTT packets, now (RFC 9001 section 4.7, as quic-go does), and
	// congestion control and loss recovery start over (RFC 9002 section
	// 6.3). Packet numbers go on.
	now := time.Now()
	for h, p := range c.loss.sent.all() {
		if p.space == spaceApp {
			c.requeueFrames(p, now)
		}
		c.loss.sent.remove(h)
		c.putSentPacket(p)
	}
	c.loss.rec = recovery.New(c.config.recoveryConfig(false))
	c.loss.rec.SetMaxDatagramSize(c.send.maxDatagram)
	c.loss.pacer = congestion.NewPacer(congestion.DefaultMaxDatagramSize)
	c.loss.pacer.SetMaxDatagramSize(c.send.maxDatagram)
}

// handleVersionNegotiation processes a Version Negotiation packet (RFC 9000
// section 6.2): the client starts over with the first of its versions the
// server lists, or fails with a VersionNegotiationError.
func (c *Conn) handleVersionNegotiation(pkt []byte) {
	if c.hs.receivedFirst || c.hs.versionRestarted {
		return
	}
	dcid, scid, vs, err := wire.ParseVersionNegotiation(pkt, nil)
	if err != nil || !bytes.Equal(dcid, c.cids.src) || !bytes.Equal(scid, c.cids.origDest) {
		return
	}
	theirs := make([]Version, 0, len(vs))
	for _, v := range vs {
		if v == c.version {
			return // RFC 9000 6.2: ignore a VN listing our version
		}
		theirs = append(theirs, v)
	}
	var v wire.Version
	for _, ours := range c.config.Versions {
		if slices.Contains(theirs, ours) {
			v = ours
			break
		}
	}
	if v == 0 {
		c.destroyLocked(&VersionNegotiationError{Ours: slices.Clone(c.config.Versions), Theirs: theirs})
		return
	}
	// Throw the first connection attempt away and start a new one in v,
	// keeping our connection ID and the API objects.
	c.hs.versionRestarted = true
	c.hs.tls.Close()
	c.version = v
	c.cids.origDest = make([]byte, 8)
	_, _ = rand.Read(c.cids.origDest)
	c.cids.dest = c.cids.origDest
	for i := range c.spaces {
		c.spaces[i] = pnSpace{}
	}
	c.spaces[spaceInitial].tracker.Init(protocol.SpaceInitial, ackgen.Config{})
	c.spaces[spaceHandshake].tracker.Init(protocol.SpaceHandshake, ackgen.Config{})
	c.spaces[spaceApp].tracker.Init(protocol.SpaceAppData, ackgen.Config{})
	c.loss.rec = recovery.New(c.config.recoveryConfig(false))
	c.loss.pacer = congestion.NewPacer(congestion.DefaultMaxDatagramSize)
	c.loss.sent.clear()
	c.keys.app = nil
	sealer, opener, err := handshake.NewInitialKeys(c.cids.dest, handshake.Version(v), true)
	if err != nil {
		c.closeWithError(err)
		return
	}
	c.spaces[spaceInitial].sealer = sealer
	c.spaces[spaceInitial].opener = opener
	if err := c.startTLS(); err != nil {
		c.closeWithError(err)
	}
}
