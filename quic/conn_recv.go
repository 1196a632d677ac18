package quic

import (
	"bytes"
	"errors"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/streambuf"
	"github.com/turboretry/turboretry/internal/wire"
)

// handleDatagram processes one received datagram, all its coalesced packets.
func (c *Conn) handleDatagram(p receivedPacket) {
	defer putBuffer(p.buf)
	if c.close.finished {
		return
	}
	if c.close.closing {
		// Answer with our CONNECTION_CLOSE, exponentially less often.
		c.close.recvCount++
		if c.close.packet != nil && c.close.recvCount&(c.close.recvCount-1) == 0 {
			c.send.pending = append(c.send.pending, outDatagram{b: c.close.packet})
		}
		return
	}
	if c.close.draining {
		return
	}
	c.path.noteSource(&p, c.isClient, &c.x.local)
	if c.close.masked == nil {
		// Not when called from retryUndecryptable for a datagram whose
		// own read has not finished: the outer call applies it.
		defer c.applyMaskedClose()
	}
	if c.trace != nil {
		c.trace.datagram(&p)
		c.trace.setRxTuple(&c.path, c.isClient, c.t)
	}
	c.admit.bytesRecv += uint64(len(p.data))
	c.stats.bytesRecv += uint64(len(p.data))
	if !c.isClient && !c.admit.validated {
		c.loss.rec.SetAmplificationLimited(false, p.rcvTime)
	}
	data := p.data
	for len(data) > 0 && c.close.err == nil {
		if !wire.IsLongHeader(data[0]) {
			c.handleShortPacket(data, p)
			return
		}
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(data, &hdr); err != nil {
			if c.isClient && len(data) >= 5 && data[1]|data[2]|data[3]|data[4] == 0 {
				c.handleVersionNegotiation(data)
			}
			return
		}
		pkt := data[:hdr.PacketLen]
		data = data[hdr.PacketLen:]
		if hdr.Version != c.version && !c.x.vn.acceptOtherVersion(pkt, &hdr, c.isClient, &c.version, &c.spaces, &c.cids, c.config) {
			continue
		}
		if hdr.Type == wire.PacketTypeRetry {
			if c.isClient {
				c.handleRetry(pkt, &hdr)
			}
			return
		}
		// A peer may switch to an ID from NEW_CONNECTION_ID (sent in 0.5-RTT)
		// while still sending Handshake packets, as quic-go does.
		if !c.cids.owns(hdr.DestConnID) && (c.isClient || !bytes.Equal(hdr.DestConnID, c.cids.clientDest)) {
			continue
		}
		switch hdr.Type {
		case wire.PacketTypeInitial:
			if c.isClient && len(hdr.Token) > 0 {
				continue // a server never sends a token (RFC 9000 17.2.2)
			}
			c.handleLongPacket(spaceInitial, pkt, &hdr, p)
		case wire.PacketTypeHandshake:
			c.handleLongPacket(spaceHandshake, pkt, &hdr, p)
		case wire.PacketType0RTT:
			c.handle0RTTPacket(pkt, &hdr, p)
		}
		// Packets kept for the keys this one brought go first, before the
		// rest of the datagram: they were sent (or arrived) earlier, and
		// quic-go reads them in this order too.
		for c.keys.retryLater && len(data) > 0 {
			c.keys.retryLater = false
			c.retryUndecryptable()
		}
	}
}

// keepUndecryptable holds packet pkt of datagram p until its keys arrive.
func (k *keyState) keepUndecryptable(pkt []byte, p receivedPacket, trace *connTracer) {
	if len(k.undecryptable) >= maxUndecryptable {
		return
	}
	if trace != nil {
		trace.buffered(pkt)
	}
	b := getBuffer()
	*b = append((*b)[:0], pkt...)
	kept := receivedPacket{buf: b, data: *b, remote: p.remote, addrPort: p.addrPort, rcvTime: p.rcvTime, ecn: p.ecn, local: p.local, via: p.via}
	if trace != nil {
		kept.checksum = trace.checksum
	}
	k.undecryptable = append(k.undecryptable, kept)
}

// retryUndecryptable reprocesses the kept packets after new keys arrived.
func (c *Conn) retryUndecryptable() {
	for _, p := range c.keys.takeUndecryptable() {
		// Do not count the bytes twice for the amplification limit.
		c.admit.bytesRecv -= uint64(len(p.data))
		c.handleDatagram(p)
	}
}

// takeUndecryptable returns the kept packets, ready to be processed again.
func (k *keyState) takeUndecryptable() []receivedPacket {
	kept := k.undecryptable
	k.undecryptable = nil
	for i := range kept {
		kept[i].data = (*kept[i].buf)[:len(kept[i].data)]
	}
	return kept
}

func (c *Conn) handleLongPacket(space int, pkt []byte, hdr *wire.LongHeader, p receivedPacket) {
	sp := &c.spaces[space]
	if sp.discarded {
		return
	}
	if sp.opener == nil {
		c.keys.keepUndecryptable(pkt, p, c.trace)
		return
	}
	largest := int64(-1)
	if pn, ok := sp.tracker.LargestReceived(); ok {
		largest = int64(pn)
	}
	if c.isClient && space == spaceInitial && c.hs.receivedFirst && !bytes.Equal(hdr.SrcConnID, c.cids.dest) {
		return
	}
	// UnprotectPacket works in place; keep the header's source CID when
	// it becomes our destination CID.
	var scid []byte
	if c.isClient && !c.hs.receivedFirst {
		scid = slices.Clone(hdr.SrcConnID)
	}
	opener := sp.opener
	if space == spaceInitial {
		opener = c.x.vn.initialOpener(hdr.Version, c.version, &c.spaces[spaceInitial])
	}
	payload, pn, err := opener.UnprotectPacket(pkt, hdr.PNOffset, largest)
	if err != nil {
		return
	}
	if pkt[0]&0x0c != 0 {
		c.closeWithError(qerr.NewProtocolViolation(0, "reserved bits set"))
		return
	}
	if sp.tracker.IsDuplicate(pn) {
		return
	}
	if c.isClient && !c.hs.receivedFirst {
		c.hs.receivedFirst = true
		c.cids.dest = scid
	}
	pt := wire.PacketTypeInitial
	if space == spaceHandshake {
		pt = wire.PacketTypeHandshake
	}
	if c.trace != nil {
		c.trace.packetReceived(pt, pn, hdr, pkt, nil, payload, p.ecn, c.hs.peerAckDelayExp)
	}
	c.processPayload(space, pt, pn, payload, p.rcvTime)
	if c.close.err == nil && space == spaceHandshake && !c.isClient && !c.admit.validated {
		// A Handshake packet proves the client owns its address, and
		// means it has Handshake keys: Initial keys go (RFC 9001 4.9.1).
		c.admit.addressValidated(c.server)
		c.dropSpace(spaceInitial, p.rcvTime)
	}
}

func (c *Conn) handleShortPacket(pkt []byte, p receivedPacket) {
	now := p.rcvTime
	// Decryption works in place: keep what a stateless reset token would be.
	var tail [16]byte
	mayBeReset := len(pkt) >= connid.MinStatelessResetSize
	if mayBeReset {
		copy(tail[:], pkt[len(pkt)-16:])
	}
	var sh wire.ShortHeader
	if err := wire.ParseShortHeader(pkt, c.t.cidLen, &sh); err != nil {
		return
	}
	if !c.cids.owns(sh.DestConnID) {
		// The Transport routes datagrams ending in our peer's reset token here.
		if mayBeReset && c.cids.isStatelessReset(tail[:]) {
			c.destroyLocked(&StatelessResetError{})
		}
		return
	}
	if c.keys.app == nil || !c.keys.app.CanReceive() {
		c.keys.keepUndecryptable(pkt, p, c.trace)
		return
	}
	sp := &c.spaces[spaceApp]
	largest := int64(-1)
	if pn, ok := sp.tracker.LargestReceived(); ok {
		largest = int64(pn)
	}
	payload, pn, keyUpdated, err := c.keys.app.UnprotectPacket(pkt, sh.PNOffset, largest)
	if err != nil {
		if errors.Is(err, handshake.ErrKeyUpdateTooSoon) {
			c.closeWithError(qerr.NewTransportError(qerr.KeyUpdateError, 0, "key updated again before an acknowledgment in the current phase"))
			return
		}
		if mayBeReset && c.cids.isStatelessReset(tail[:]) {
			c.destroyLocked(&StatelessResetError{})
			return
		}
		if c.keys.app.AuthFailures() >= c.keys.app.IntegrityLimit() {
			c.closeWithError(qerr.NewTransportError(qerr.AEADLimitReached, 0, "integrity limit reached"))
		}
		return
	}
	if pkt[0]&0x18 != 0 {
		c.closeWithError(qerr.NewProtocolViolation(0, "reserved bits set"))
		return
	}
	if keyUpdated {
		if !c.hs.confirmed {
			c.closeWithError(qerr.NewTransportError(qerr.KeyUpdateError, 0, "key update before handshake confirmation"))
			return
		}
		if c.trace != nil {
			c.trace.keyUpdate(true, c.keys.app.Generation())
		}
		c.keys.onPeerUpdate(now, c.loss.pto())
	} else if (pkt[0]&handshake.KeyPhaseBit != 0) == c.keys.app.KeyPhase() {
		c.keys.onCurrentPhase(now, c.loss.pto())
	}
	if sp.tracker.IsDuplicate(pn) {
		return
	}
	if c.trace != nil {
		c.trace.packetReceived(wire.PacketType1RTT, pn, nil, pkt, sh.DestConnID, payload, p.ecn, c.hs.peerAckDelayExp)
	}
	c.cids.rxDCID = sh.DestConnID
	c.path.rx.nonProbing = false
	c.processPayload(spaceApp, wire.PacketType1RTT, pn, payload, now)
	c.cids.rxDCID = nil
	if !c.path.rx.other {
		c.path.migration.noteDCID(sh.DestConnID)
	} else if !c.isClient && int64(pn) > largest && c.path.rx.nonProbing && c.hs.confirmed && c.close.err == nil {
		// A server follows its peer to a new address once a non-probing
		// packet with the highest packet number so far came from there
		// (RFC 9000 section 9.3), and only after the handshake is
		// confirmed: a client must not migrate earlier (section 9).
		c.migrateTo(sh.DestConnID, now)
	}
}

// processPayload handles the frames of a decrypted packet and records it.
func (c *Conn) processPayload(space int, pt wire.PacketType, pn uint64, payload []byte, now time.Time) {
	if len(payload) == 0 {
		c.closeWithError(qerr.NewProtocolViolation(0, "packet without frames"))
		return
	}
	ackEliciting := false
	// A server notes how much of the client's Initial CRYPTO data it had,
	// to tell a probe from a packet that brings more (onClientInitialProbe).
	initialProbe := space == spaceInitial && !c.isClient
	var cryptoBefore [2]uint64
	if initialProbe {
		cryptoBefore = c.spaces[space].cryptoReceived()
	}
	if c.frame == nil {
		c.frame = new(wire.Frame) // released while the connection is idle
	}
	f := c.frame
	for len(payload) > 0 {
		n, err := wire.ParseFrame(payload, f)
		if err != nil {
			c.closeWithError(err)
			return
		}
		payload = payload[n:]
		if !f.Type.AllowedIn(pt) {
			c.closeWithError(qerr.NewProtocolViolation(uint64(f.Type), "frame not allowed in this packet type"))
			return
		}
		if f.IsAckEliciting() {
			ackEliciting = true
		}
		if !f.Type.IsProbing() {
			c.path.rx.nonProbing = true
		}
		if err := c.handleFrame(space, f, now); err != nil {
			c.closeWithError(err)
			return
		}
		if c.close.err != nil {
			return
		}
	}
	if initialProbe && ackEliciting && c.spaces[space].cryptoReceived() == cryptoBefore {
		c.onClientInitialProbe()
	}
	_ = c.spaces[space].tracker.Received(pn, ackEliciting, c.path.rx.ecn, now)
	c.stats.packetsRecv++
	c.idle.lastActivity = now
	c.idle.lastSendOrRecv = now
	c.idle.ackElicitingSent = false
}

func (c *Conn) handleFrame(space int, f *wire.Frame, now time.Time) error {
	switch f.Type {
	case wire.FrameTypePadding, wire.FrameTypePing:
	case wire.FrameTypeAck, wire.FrameTypeAckECN:
		return c.handleAckFrame(space, f, now)
	case wire.FrameTypeCrypto:
		if err := c.spaces[space].receiveCrypto(space, f, &c.hs); err != nil {
			return err
		}
		return c.processTLSEvents()
	case wire.FrameTypeConnectionClose, wire.FrameTypeConnectionCloseApp:
		if err := c.close.peerClose(space, f); err != nil {
			c.drainOnPeerClose(err)
		}
	case wire.FrameTypeHandshakeDone:
		if !c.isClient {
			return qerr.NewProtocolViolation(uint64(f.Type), "HANDSHAKE_DONE sent by client")
		}
		c.confirmHandshake(now)
	case wire.FrameTypeNewToken:
		if !c.isClient {
			return qerr.NewProtocolViolation(uint64(f.Type), "NEW_TOKEN sent by client")
		}
		if c.config.TokenStore != nil && len(f.Token) > 0 {
			c.tokens.received(f.Token) // stored by run, without mu
		}
	case wire.FrameTypeNewConnectionID:
		wake, err := c.cids.handleNew(f, c.t, c)
		if wake {
			c.wake()
		}
		return err
	case wire.FrameTypeRetireConnectionID:
		wake, err := c.cids.handleRetire(f)
		if wake {
			c.wake()
		}
		return err
	case wire.FrameTypePathChallenge:
		c.path.onPathChallenge(f.PathData, c.isClient)
	case wire.FrameTypePathResponse:
		c.path.onPathResponse(f.PathData, &c.x.pa)
	case wire.FrameTypeDatagram:
		if !c.config.EnableDatagrams {
			return qerr.NewProtocolViolation(uint64(f.Type), "DATAGRAM frames not negotiated")
		}
		c.datagrams.onReceived(f.Data)
	default:
		return c.handleStreamFrame(f, now)
	}
	return nil
}

func (c *Conn) handleAckFrame(space int, f *wire.Frame, now time.Time) error {
	exp := uint8(wire.DefaultAckDelayExponent)
	if space == spaceApp {
		exp = c.hs.peerAckDelayExp
	}
	delay := time.Duration(0)
	if f.AckDelay < 1<<40 {
		delay = time.Duration(f.AckDelay<<exp) * time.Microsecond
	}
	c.loss.events.Reset()
	prevLargest, hadLargest := c.loss.rec.LargestAcked(protocol.PacketNumberSpace(space))
	if err := c.loss.rec.OnAckReceived(protocol.PacketNumberSpace(space), f.AckRanges, delay, now, &c.loss.events); err != nil {
		var te *qerr.TransportError
		if !errors.As(err, &te) {
			return nil // our own bug, not the peer's
		}
		return qerr.NewTransportError(te.Code, uint64(f.Type), te.Reason)
	}
	marked := 0
	var largest uint64
	var largestSent time.Time
	acked1RTT := false
	for _, p := range c.loss.events.Acked {
		if space == spaceApp && c.keys.first1RTTPN >= 0 && p.Number >= uint64(c.keys.first1RTTPN) {
			acked1RTT = true
		}
		if c.onPacketAcked(p.Handle) {
			marked++
		}
		if largestSent.IsZero() || p.Number > largest {
			largest, largestSent = p.Number, p.TimeSent
		}
	}
	if !largestSent.IsZero() && len(f.AckRanges) > 0 && (!hadLargest || f.AckRanges[0].Largest > prevLargest) {
		c.ecn.onAck(space, f, marked, largestSent, now, c.loss.rec)
	}
	if c.trace != nil {
		c.trace.lost(&c.loss)
	}
	for _, p := range c.loss.events.Lost {
		c.onPacketLost(p.Handle, now)
	}
	c.loss.countLost(now, &c.stats, &c.mtu, c.baseDatagram, &c.send)
	if c.trace != nil {
		c.traceMetrics()
	}
	if acked1RTT && c.isClient && !c.hs.confirmed && c.hs.complete {
		// An acknowledged 1-RTT packet confirms the handshake (RFC 9001
		// 4.1.2); an ACK of 0-RTT packets alone does not, or the client
		// would drop its Handshake keys before its Finished got through.
		c.confirmHandshake(now)
	}
	return nil
}

// receiveCrypto hands the CRYPTO data of frame f, received in space sp
// (number space), to TLS (hs) in order; the caller processes the events
// TLS has then.
func (sp *pnSpace) receiveCrypto(space int, f *wire.Frame, hs *handshakeState) error {
	if sp.cryptoIn == nil {
		sp.cryptoIn = streambuf.NewRecvBuffer(maxCryptoBuffer)
	}
	if err := sp.cryptoIn.Push(f.Offset, f.Data, false); err != nil {
		if errors.Is(err, streambuf.ErrBufferExceeded) {
			return qerr.NewTransportError(qerr.CryptoBufferExceeded, uint64(f.Type), "too much out-of-order CRYPTO data")
		}
		return bufferError(err, uint64(f.Type))
	}
	for d := sp.cryptoIn.Peek(); len(d) > 0; d = sp.cryptoIn.Peek() {
		// HandleData copies what it keeps, so the bytes can go at once.
		err := hs.handleCryptoData(space, d)
		sp.cryptoIn.Skip(len(d))
		if err != nil {
			return tlsError(err)
		}
	}
	return nil
}

// bufferError turns a reassembly error into the transport error that closes
// the connection, naming the STREAM or CRYPTO frame that caused it.
func bufferError(err error, frameType uint64) error {
	var be *streambuf.Error
	if errors.As(err, &be) {
		return qerr.NewTransportError(be.Code, frameType, be.Reason)
	}
	return qerr.NewTransportError(qerr.InternalError, frameType, err.Error())
}
