package quic

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/turboretry/turboretry/internal/ackgen"
	"github.com/turboretry/turboretry/internal/flowcontrol"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

const (
	// maxPacketSize is the base datagram size: every datagram until path
	// MTU discovery (mtu.go) finds a larger one, and PTO probes.
	maxPacketSize  = 1200
	minInitialSize = 1200 // RFC 9000 section 14.1
	tagLen         = 16
	minPacketRoom  = 64
)

// sentFrameKind says what a sent frame was, for acknowledgment and loss.
type sentFrameKind uint8

const (
	sfCrypto sentFrameKind = iota
	sfStream
	sfResetStream
	sfStopSending
	sfMaxStreamData
	sfMaxData
	sfMaxStreamsBidi
	sfMaxStreamsUni
	sfHandshakeDone
	sfRetireCID
	sfNewToken
	sfNewCID
	sfMTUProbe // n is the probe's size
)

type sentFrame struct {
	kind sentFrameKind
	fin  bool
	id   uint64 // stream ID or sequence number
	off  uint64
	n    uint64
}

// sentPacket is what we remember about an ack-eliciting packet until it is
// acknowledged or lost; recovery.SentPacket.Handle points here.
type sentPacket struct {
	space      int
	ackLargest int64  // Largest Acknowledged of the ACK frame it carried, or -1
	eliciting  bool   // carries an ack-eliciting frame that is not in frames
	keyGen     uint64 // 1-RTT key generation it was sealed with
	ptoProbe   bool   // sent because the PTO asked for a probe
	resent     bool   // a PTO queued its frames again (lossState.takeOldestData)
	ecn        bool   // sent marked ECT(0)
	ecnTest    bool   // marked during the ECN testing period
	frames     []sentFrame
}

// hasResendable reports whether p carries a frame that a PTO can queue
// again: an MTU probe is not sent again by a PTO.
func (p *sentPacket) hasResendable() bool {
	for _, f := range p.frames {
		if f.kind != sfMTUProbe {
			return true
		}
	}
	return false
}

// packetInfo locates a packet inside the datagram being built.
type packetInfo struct {
	space        int
	start        int
	pnOffset     int
	pnLen        int
	payloadEnd   int
	lengthPos    int // -1 for a short header
	pn           uint64
	ackEliciting bool
	padded       bool
	early        bool // a 0-RTT packet (client), sealed with the early keys
	mtuProbe     bool // a path MTU probe
	sp           *sentPacket
}

func (c *Conn) canSealIn(space int) bool {
	if space == spaceApp {
		return (c.keys.app != nil && c.keys.app.CanSend()) || c.sendsEarly()
	}
	sp := &c.spaces[space]
	return !sp.discarded && sp.sealer != nil
}

func (c *Conn) anyProbes() bool {
	for i := range c.spaces {
		if c.spaces[i].probes > 0 {
			return true
		}
	}
	return false
}

// sendLocked builds the datagrams that may leave now into send.pending and
// reports whether more are waiting.
func (c *Conn) sendLocked(now time.Time) bool {
	c.refuseIfServerClosed()
	if c.close.finished || c.close.closing || c.close.draining || !c.hs.started() {
		return false
	}
	if len(c.path.responses) > 0 {
		c.sendProbeResponses(now)
	}
	if c.path.migration.sendChallenge {
		c.sendPathChallenge(now)
	}
	if len(c.path.extra) > 0 {
		c.sendPathProbes(now)
	}
	if size := c.mtuProbeSize(now); size > 0 && c.loss.rec.CanSend() {
		c.sendMTUProbe(now, size)
	}
	c.send.openArena()
	defer c.send.closeArena()
	c.send.appProbe, c.send.repeatProbe = nil, false
	for range maxDatagramsPerRun {
		limit := c.pathSendLimit(c.send.maxDatagram)
		if limit < minPacketRoom {
			return false
		}
		if !c.isClient && !c.admit.validated {
			budget := uint64(0)
			if 3*c.admit.bytesRecv > c.admit.bytesSent {
				budget = 3*c.admit.bytesRecv - c.admit.bytesSent
			}
			if budget < minPacketRoom {
				c.loss.rec.SetAmplificationLimited(true, now)
				return false
			}
			limit = int(min(budget, uint64(limit)))
		}
		probing := c.anyProbes()
		if probing {
			// A PTO probe goes at the base size: if large datagrams
			// vanish (an MTU black hole), it still gets through, and its
			// acknowledgment declares the large ones lost.
			limit = min(limit, c.baseDatagram)
		}
		mayElicit := probing || c.loss.rec.CanSend()
		// Lost Initial or Handshake data goes out even when the congestion
		// window is full: before the handshake is confirmed 1-RTT packets
		// in flight may never be acknowledged (the peer lacks its keys
		// until it has this data) and no PTO covers them, so waiting for
		// the window would stall the handshake. Only that data is sent
		// (handshakeOnly); it is small, and bounded by the handshake.
		c.send.handshakeOnly = false
		if !mayElicit && !c.hs.confirmed && c.handshakeRetransmissionPending() {
			mayElicit, c.send.handshakeOnly = true, true
		}
		if mayElicit && !probing && !c.send.handshakeOnly {
			cwnd := c.loss.rec.Controller().CongestionWindow()
			if next := c.loss.pacer.NextSendTime(now, cwnd, c.loss.pacingRTT()); next.After(now) {
				mayElicit = false
				c.send.pacingDeadline = next
			}
		}
		c.send.ecn, c.send.ecnTest = c.ecnCodepoint()
		d := c.buildDatagram(now, limit, mayElicit)
		mark, testing := c.send.ecn, c.send.ecnTest
		c.send.ecn, c.send.ecnTest = protocol.ECNNotECT, false
		if d == nil {
			return false
		}
		if testing {
			c.onECNMarked()
		}
		if c.path.migration.validating {
			c.path.migration.sent += uint64(len(d))
		}
		c.send.queueDatagram(d, mark)
		if probe := c.send.appProbe; probe != nil {
			c.send.appProbe = nil
			if c.spaces[spaceApp].probes > 0 && len(c.streams.sendList) == 0 {
				// The next probe has no stream data of its own: it
				// carries this one's again, so that either probe
				// getting through delivers it.
				c.send.repeatProbe = c.streams.requeueData(probe)
			}
		}
	}
	return true
}

// handshakeRetransmissionPending reports lost Initial or Handshake CRYPTO
// data waiting to be sent again.
func (c *Conn) handshakeRetransmissionPending() bool {
	for _, space := range [2]int{spaceInitial, spaceHandshake} {
		if sp := &c.spaces[space]; !sp.discarded && c.canSealIn(space) && sp.crypto.HasRetransmission() {
			return true
		}
	}
	return false
}

// buildDatagram coalesces one packet per space with something to send.
func (c *Conn) buildDatagram(now time.Time, limit int, mayElicit bool) []byte {
	buf := c.send.datagramBuffer()
	var pkts [3]packetInfo
	n := 0
	// Coalesced packets go in increasing encryption level: Initial,
	// 0-RTT, Handshake, 1-RTT (RFC 9000 section 12.2).
	order := [3]int{spaceInitial, spaceHandshake, spaceApp}
	if c.sendsEarly() {
		order = [3]int{spaceInitial, spaceApp, spaceHandshake}
	}
	for _, space := range order {
		if !c.canSealIn(space) {
			continue
		}
		room := limit - len(buf)
		if room < minPacketRoom {
			break
		}
		elicit := mayElicit && !(c.send.handshakeOnly && space == spaceApp)
		if pi, ok := c.buildPacket(&buf, space, room, now, elicit, c.cids.dest, nil); ok {
			pkts[n] = pi
			n++
		}
	}
	c.send.handshakeOnly = false
	if n == 0 {
		c.send.releaseBuffer(buf)
		return nil
	}
	d := c.finishDatagram(buf, pkts[:n], limit, now)
	if d == nil {
		c.send.releaseBuffer(buf)
	}
	return d
}

// finishDatagram pads, seals and records the packets of a datagram.
func (c *Conn) finishDatagram(buf []byte, pkts []packetInfo, limit int, now time.Time) []byte {
	last := &pkts[len(pkts)-1]
	target := 0
	if pkts[0].space == spaceInitial && (c.isClient || pkts[0].ackEliciting) {
		target = min(c.baseDatagram, limit)
	}
	if c.send.pad {
		// A PATH_CHALLENGE or PATH_RESPONSE inside: the datagram also
		// proves the path carries full-size datagrams.
		c.send.pad = false
		target = limit
	}
	if target > 0 {
		if need := target - len(buf); need > 0 {
			buf = buf[:last.payloadEnd]
			buf = append(buf, make([]byte, need+tagLen)...)
			last.payloadEnd += need
			last.padded = true
		}
	}
	anyEliciting := false
	for i := range pkts {
		p := &pkts[i]
		if p.lengthPos >= 0 {
			wire.PutVarintWithLen(buf[p.lengthPos:], uint64(p.payloadEnd-p.pnOffset+tagLen), 2)
		}
		if c.trace != nil {
			c.tracePacketSent(buf, p)
		}
		pkt := buf[p.start : p.payloadEnd : p.payloadEnd+tagLen]
		var err error
		if p.early {
			_, err = c.early.sealer.ProtectPacket(pkt, p.pnOffset-p.start, p.pnLen, p.pn)
		} else if p.space == spaceApp {
			p.sp.keyGen = c.keys.app.Generation()
			_, err = c.keys.app.ProtectPacket(pkt, p.pnOffset-p.start, p.pnLen, p.pn)
			if p.sp.ackLargest >= 0 {
				c.keys.app.OnAckSent(uint64(p.sp.ackLargest))
			}
		} else {
			_, err = c.spaces[p.space].sealer.ProtectPacket(pkt, p.pnOffset-p.start, p.pnLen, p.pn)
		}
		if err != nil {
			c.closeWithError(err)
			return nil
		}
		c.loss.nextHandle++
		c.stats.packetsSent++
		size := p.payloadEnd + tagLen - p.start
		inFlight := p.ackEliciting || p.padded
		_ = c.loss.rec.OnPacketSent(protocol.PacketNumberSpace(p.space), recovery.SentPacket{
			Number:       p.pn,
			TimeSent:     now,
			Handle:       c.loss.nextHandle,
			Size:         size,
			AckEliciting: p.ackEliciting,
			InFlight:     inFlight,
			MTUProbe:     p.mtuProbe,
		})
		if p.ackEliciting {
			p.sp.ecn = c.send.ecn != protocol.ECNNotECT
			p.sp.ecnTest = p.sp.ecn && c.send.ecnTest
			if p.sp.ecnTest {
				c.ecn.sentTest++
			}
			c.loss.sent.add(c.loss.nextHandle, p.sp)
			anyEliciting = true
		} else {
			c.putSentPacket(p.sp)
		}
		if inFlight {
			c.loss.pacer.OnPacketSent(now, size, c.loss.rec.Controller().CongestionWindow(), c.loss.pacingRTT())
		}
	}
	if c.trace != nil {
		c.traceMetrics()
	}
	c.admit.bytesSent += uint64(len(buf))
	c.stats.bytesSent += uint64(len(buf))
	c.idle.lastSendOrRecv = now
	if anyEliciting {
		if !c.idle.ackElicitingSent {
			c.idle.lastActivity = now
		}
		c.idle.ackElicitingSent = true
		c.send.pingPending = false
	}
	for i := range pkts {
		if pkts[i].space == spaceHandshake && c.isClient {
			// The client drops Initial keys once it sends Handshake (RFC 9001 4.9.1).
			c.dropSpace(spaceInitial, now)
		}
	}
	return buf
}

// minAppPacketNumberLen is the shortest packet number encoding of a 1-RTT
// packet, for reordering tolerance (see buildPacket).
const minAppPacketNumberLen = 2

// buildPacket appends one packet of the space to dcid, unsealed, with
// tagLen spare bytes after it. onlyFrame, when set, is the only frame (a
// CONNECTION_CLOSE, or a path frame or PING sent in a datagram of its own);
// it must start with its one-byte frame type.
func (c *Conn) buildPacket(buf *[]byte, space, room int, now time.Time, mayElicit bool, dcid, onlyFrame []byte) (packetInfo, bool) {
	sp := &c.spaces[space]
	start := len(*buf)
	b := *buf
	pn := sp.nextPN
	largestAcked := wire.NoPacketNumber
	if la, ok := c.loss.rec.LargestAcked(protocol.PacketNumberSpace(space)); ok {
		largestAcked = la
	}
	pnLen := wire.PacketNumberLen(pn, largestAcked)
	if space == spaceApp {
		// The RFC minimum assumes the peer decodes against a largest
		// received number near ours; a 1-RTT packet overtaken by more than
		// 128 others would decode to the wrong number and fail to decrypt.
		// Two bytes tolerate 32768, as quic-go always sends at least.
		pnLen = max(pnLen, minAppPacketNumberLen)
	}
	lengthPos := -1
	early := space == spaceApp && c.sendsEarly()
	if early {
		// 0-RTT stays in the client's chosen version (RFC 9369 4.1).
		hdr := wire.LongHeader{Type: wire.PacketType0RTT, Version: c.chosenVersion(), DestConnID: dcid, SrcConnID: c.cids.src}
		b = wire.AppendLongHeader(b, &hdr, pnLen, 2)
		lengthPos = len(b) - 2
	} else if space == spaceApp {
		b = wire.AppendShortHeader(b, dcid, pnLen, false, false)
	} else {
		hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: c.version, DestConnID: dcid, SrcConnID: c.cids.src}
		if space == spaceHandshake {
			hdr.Type = wire.PacketTypeHandshake
		} else if c.isClient {
			hdr.Token = c.tokens.initial
		}
		b = wire.AppendLongHeader(b, &hdr, pnLen, 2)
		lengthPos = len(b) - 2
	}
	pnOffset := len(b)
	b = wire.AppendPacketNumber(b, pn, pnLen)
	payloadStart := len(b)
	maxEnd := start + room - tagLen
	if maxEnd-payloadStart < 8 {
		return packetInfo{}, false
	}
	p := c.getSentPacket(space)
	if onlyFrame != nil {
		if len(onlyFrame) > maxEnd-payloadStart {
			c.putSentPacket(p)
			return packetInfo{}, false
		}
		b = append(b, onlyFrame...)
		p.eliciting = wire.FrameType(onlyFrame[0]).IsAckEliciting()
	} else {
		// A PTO probe repeats the ACK frame: if the earlier one was lost
		// and the peer has nothing more to send, it would never learn
		// that its flight arrived (say the server's first Initial, while
		// the client waits for the rest of the ServerHello).
		b = c.appendAck(b, sp, maxEnd, now, p, sp.probes > 0)
		if mayElicit || sp.probes > 0 {
			// A 1-RTT probe puts the stream data first, the data a PTO
			// took again included: control frames and CRYPTO data
			// (NEW_TOKEN, a session ticket) taken with it would push
			// part of it into the next datagram, and the peer would need
			// both probes through instead of either (RFC 9002 6.2.4).
			// They take the room left, the rest goes in the next packet;
			// only the one-byte HANDSHAKE_DONE goes in front.
			appProbe := space == spaceApp && sp.probes > 0
			if appProbe {
				b = c.hs.appendDone(b, maxEnd, p)
				b = c.appendStreamFrames(b, maxEnd, p)
			}
			if space == spaceApp {
				b = c.appendControlFrames(b, maxEnd, now, p)
			}
			b = c.appendCrypto(b, sp, maxEnd, p)
			if space == spaceApp {
				b = c.appendDatagrams(b, maxEnd, p)
				if !appProbe {
					b = c.appendStreamFrames(b, maxEnd, p)
				}
			}
		}
		if len(p.frames) == 0 && !p.eliciting && (sp.probes > 0 || (space == spaceApp && c.send.pingPending && mayElicit)) {
			b = append(b, byte(wire.FrameTypePing))
			p.eliciting = true
		}
		if p.ackLargest < 0 && (p.eliciting || len(p.frames) > 0) && !sp.tracker.AlarmTime().IsZero() {
			// Piggyback the ACK that is not due yet on this packet, in
			// front of the frames (it is sent now either way).
			ack := c.appendAck(c.send.ackScratch[:0], sp, maxEnd-len(b), now, p, true)
			if len(ack) > 0 {
				b = slices.Insert(b, payloadStart, ack...)
			}
			c.send.ackScratch = ack[:0]
		}
	}
	if len(b) == payloadStart {
		c.putSentPacket(p)
		return packetInfo{}, false
	}
	eliciting := p.eliciting || len(p.frames) > 0
	if eliciting && sp.probes > 0 && onlyFrame == nil {
		// A lone path frame or MTU probe is no PTO probe: those carry
		// data at the base size.
		sp.probes--
		p.ptoProbe = true
		if space == spaceApp && !early {
			// A probe that repeats the one before is left to loss
			// detection: a later PTO takes that data from the one
			// before (takeOldestData), and the two copies must not
			// crowd out the data sent after them.
			p.resent = c.send.repeatProbe
			c.send.repeatProbe = false
			c.send.appProbe = p
		}
	}
	for len(b)-pnOffset < 4 {
		b = append(b, 0) // PADDING so header protection has its sample
	}
	payloadEnd := len(b)
	b = append(b, make([]byte, tagLen)...)
	if early {
		sp.nextPN++
	} else {
		sp.nextPN = sp.skip.Next(pn)
	}
	if space == spaceApp && !early && c.keys.first1RTTPN < 0 {
		c.keys.first1RTTPN = int64(pn)
	}
	*buf = b
	return packetInfo{
		space:        space,
		start:        start,
		pnOffset:     pnOffset,
		pnLen:        pnLen,
		payloadEnd:   payloadEnd,
		lengthPos:    lengthPos,
		pn:           pn,
		ackEliciting: eliciting,
		early:        early,
		sp:           p,
	}, true
}

// appendAck appends an ACK frame when one is due, or whenever there is
// something to acknowledge with force.
func (c *Conn) appendAck(b []byte, sp *pnSpace, maxEnd int, now time.Time, p *sentPacket, force bool) []byte {
	if !sp.tracker.HasRanges() || (!force && !sp.tracker.ShouldSendAck(now)) {
		return b
	}
	if sp.ranges == nil {
		// BuildAck grows it to the tracker's ranges; an idle
		// connection's tracker holds one or two.
		sp.ranges = make([]wire.AckRange, 0, 4)
	}
	ack, ok := sp.tracker.BuildAck(sp.ranges[:0], now)
	if !ok {
		return b
	}
	sp.ranges = ack.Ranges
	ranges := ack.Ranges
	delay := ackgen.EncodeAckDelay(ack.Delay, wire.DefaultAckDelayExponent)
	ecnLen := 0
	if ack.HasECN {
		ecnLen = wire.VarintLen(ack.ECT0) + wire.VarintLen(ack.ECT1) + wire.VarintLen(ack.CE)
	}
	for len(ranges) > 1 && wire.AckFrameLen(ranges, delay)+ecnLen > maxEnd-len(b) {
		ranges = ranges[:len(ranges)-1]
	}
	if wire.AckFrameLen(ranges, delay)+ecnLen > maxEnd-len(b) {
		return b
	}
	if ack.HasECN {
		b = wire.AppendAckECNFrame(b, ranges, delay, ack.ECT0, ack.ECT1, ack.CE)
	} else {
		b = wire.AppendAckFrame(b, ranges, delay)
	}
	sp.tracker.OnAckSent()
	p.ackLargest = int64(ranges[0].Largest)
	return b
}

func appendIfFits(b []byte, maxEnd int, f *wire.Frame) ([]byte, bool) {
	if wire.FrameLen(f) > maxEnd-len(b) {
		return b, false
	}
	return wire.AppendFrame(b, f), true
}

// appendDone appends the HANDSHAKE_DONE frame when one is due.
func (hs *handshakeState) appendDone(b []byte, maxEnd int, p *sentPacket) []byte {
	if hs.sendDone && maxEnd-len(b) >= 1 {
		b = append(b, byte(wire.FrameTypeHandshakeDone))
		hs.sendDone = false
		p.frames = append(p.frames, sentFrame{kind: sfHandshakeDone})
	}
	return b
}

func (c *Conn) appendControlFrames(b []byte, maxEnd int, now time.Time, p *sentPacket) []byte {
	var ok bool
	b = c.hs.appendDone(b, maxEnd, p)
	if c.tokens.sendIssued {
		f := wire.Frame{Type: wire.FrameTypeNewToken, Token: c.tokens.issued}
		if b, ok = appendIfFits(b, maxEnd, &f); ok {
			c.tokens.sendIssued = false
			p.frames = append(p.frames, sentFrame{kind: sfNewToken})
		}
	}
	b = c.appendPathFrames(b, maxEnd, now, p)
	srtt := c.loss.rec.RTT().SmoothedRTT()
	// Windows stop growing while the Transport's unread data is over its
	// budget (Transport.MaxReceiveBuffer).
	c.flow.recv.HoldGrowth(!c.recvGrowthAllowed())
	if c.flow.maxDataLost || c.flow.recv.NeedsUpdate() {
		limit := c.flow.recv.Limit()
		f := wire.Frame{Type: wire.FrameTypeMaxData, Limit: limit + 1<<20}
		if wire.FrameLen(&f) <= maxEnd-len(b) {
			if l, upd := c.flow.recv.MaybeUpdate(now, srtt); upd {
				limit = l
			}
			f.Limit = limit
			b = wire.AppendFrame(b, &f)
			c.flow.maxDataLost = false
			p.frames = append(p.frames, sentFrame{kind: sfMaxData})
		}
	}
	for i, d := range []flowcontrol.Direction{flowcontrol.Bidi, flowcontrol.Uni} {
		inc := c.streams.counts.Incoming(d)
		if !c.streams.maxStreamsLost[i] && !inc.NeedsUpdate() {
			continue
		}
		typ, kind := wire.FrameTypeMaxStreamsBidi, sfMaxStreamsBidi
		if d == flowcontrol.Uni {
			typ, kind = wire.FrameTypeMaxStreamsUni, sfMaxStreamsUni
		}
		f := wire.Frame{Type: typ, Limit: inc.Limit() + 1<<20}
		if wire.FrameLen(&f) > maxEnd-len(b) {
			continue
		}
		limit := inc.Limit()
		if l, upd := inc.MaybeUpdate(); upd {
			limit = l
		}
		f.Limit = limit
		b = wire.AppendFrame(b, &f)
		c.streams.maxStreamsLost[i] = false
		p.frames = append(p.frames, sentFrame{kind: kind})
	}
	for i, d := range []flowcontrol.Direction{flowcontrol.Bidi, flowcontrol.Uni} {
		if !c.streams.blocked[i] {
			continue
		}
		c.streams.blocked[i] = false
		if limit, send := c.streams.counts.Outgoing(d).Blocked(); send {
			typ := wire.FrameTypeStreamsBlockedBidi
			if d == flowcontrol.Uni {
				typ = wire.FrameTypeStreamsBlockedUni
			}
			if b, ok = appendIfFits(b, maxEnd, &wire.Frame{Type: typ, Limit: limit}); ok {
				p.eliciting = true
			}
		}
	}
	b = c.appendCIDFrames(b, maxEnd, p)
	kept := c.streams.ctrlList[:0]
	for _, s := range c.streams.ctrlList {
		b = s.appendControlFrames(b, maxEnd, now, srtt, p)
		if s.hasControlFrames() {
			kept = append(kept, s)
		} else {
			s.inCtrlList = false
		}
	}
	clear(c.streams.ctrlList[len(kept):])
	c.streams.ctrlList = kept
	return b
}

func (c *Conn) appendCrypto(b []byte, sp *pnSpace, maxEnd int, p *sentPacket) []byte {
	for sp.crypto.HasData() {
		maxLen := wire.MaxCryptoDataLen(sp.crypto.NextOffset(), maxEnd-len(b))
		if maxLen <= 0 {
			break
		}
		off, n, _, _ := sp.crypto.PeekFrame(maxLen)
		if n == 0 {
			break
		}
		// The header goes first, then the data straight from the buffer.
		b = wire.AppendCryptoFrameHeader(b, off, n)
		b, _, _, _, _ = sp.crypto.AppendFrameData(b, maxLen)
		p.frames = append(p.frames, sentFrame{kind: sfCrypto, off: off, n: uint64(n)})
	}
	return b
}

func (c *Conn) appendDatagrams(b []byte, maxEnd int, p *sentPacket) []byte {
	for len(c.datagrams.out) > 0 {
		d := c.datagrams.out[0]
		if len(d) > c.datagramLimit() {
			c.datagrams.out[0] = nil
			c.datagrams.out = c.datagrams.out[1:]
			broadcast(&c.datagrams.sendSig)
			continue
		}
		if wire.DatagramFrameLen(len(d), true) > maxEnd-len(b) {
			break
		}
		b = wire.AppendDatagramFrame(b, d, true)
		c.datagrams.out[0] = nil
		c.datagrams.out = c.datagrams.out[1:]
		broadcast(&c.datagrams.sendSig)
		p.eliciting = true
	}
	return b
}

func (c *Conn) appendStreamFrames(b []byte, maxEnd int, p *sentPacket) []byte {
	if c.streams.prioritized {
		return c.appendStreamFramesByPriority(b, maxEnd, p)
	}
	n := len(c.streams.sendList)
	served := 0
	for i := 0; i < len(c.streams.sendList) && maxEnd-len(b) > 16; {
		s := c.streams.sendList[i]
		var added bool
		b, added = s.appendStreamFrame(b, maxEnd, p)
		if added {
			served = i + 1
		}
		if !s.wantsToSend() {
			s.inSendList = false
			// Delete clears the vacated slot: a stale pointer there would
			// keep a finished stream alive.
			c.streams.sendList = slices.Delete(c.streams.sendList, i, i+1)
			if added {
				served = i
			}
			continue
		}
		if !added {
			i++
			continue
		}
		// The packet is full (the stream still has data).
		break
	}
	// Round robin: streams served move to the back.
	if served > 0 && served < len(c.streams.sendList) && n > 1 {
		// Rotate left in place (no allocation on the send path).
		slices.Reverse(c.streams.sendList[:served])
		slices.Reverse(c.streams.sendList[served:])
		slices.Reverse(c.streams.sendList)
	}
	return b
}

// outDatagram is a datagram waiting to be written; pooled ones go back to
// the send buffer pool afterwards, and those built in an arena (at
// arenaOff) give the arena back.
type outDatagram struct {
	b     []byte
	to    net.Addr   // nil: the connection's peer address
	via   *Transport // nil: the Transport the connection sends from
	arena *sendArena
	// from is the source address for a datagram to a probing peer
	// address (zero: that of the current path, local_address.go).
	from netip.Addr
	// The small fields last, where they pack into one word: a slice of
	// these is what a connection keeps between runs.
	arenaOff int32
	ecn      protocol.ECN
	pooled   bool
}

const sendBufferSize = maxProbeSize + tagLen

var sendBufferPool = sync.Pool{New: func() any { return new([sendBufferSize]byte) }}

func getSendBuffer() []byte { return sendBufferPool.Get().(*[sendBufferSize]byte)[:0] }

func putSendBuffer(b []byte) {
	if cap(b) == sendBufferSize {
		sendBufferPool.Put((*[sendBufferSize]byte)(b[:sendBufferSize]))
	}
}

// getSentPacket takes a record from the connection's free list.
func (c *Conn) getSentPacket(space int) *sentPacket {
	if n := len(c.loss.freeSent); n > 0 {
		p := c.loss.freeSent[n-1]
		c.loss.freeSent = c.loss.freeSent[:n-1]
		*p = sentPacket{space: space, ackLargest: -1, frames: p.frames[:0]}
		return p
	}
	return &sentPacket{space: space, ackLargest: -1}
}

func (c *Conn) putSentPacket(p *sentPacket) {
	if len(c.loss.freeSent) < 1024 {
		c.loss.freeSent = append(c.loss.freeSent, p)
	}
}
