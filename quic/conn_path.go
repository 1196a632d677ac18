package quic

import (
	"bytes"
	"crypto/rand"
	"net"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

// Path validation and the server's side of connection migration (RFC 9000
// sections 8.2 and 9). A client that moves to a new address (a new local
// port or interface, or a NAT rebinding) keeps its connection: the server
// answers PATH_CHALLENGE on the path it came from, follows the client to
// the new address on its first non-probing packet there, proves the
// address with its own PATH_CHALLENGE, and falls back to the last
// validated address if that fails.

const (
	// maxPathResponses bounds the PATH_RESPONSE frames we owe at once.
	maxPathResponses = 4
	// maxOpenChallenges is how many of our PATH_CHALLENGE payloads stay
	// acceptable: the latest ones, as a challenge may be lost and resent.
	maxOpenChallenges = 4
)

// pathResponse is a PATH_RESPONSE frame we owe.
type pathResponse struct {
	data [8]byte
	// to is the address the PATH_CHALLENGE came from when that is not the
	// connection's current peer address (a probe); nil otherwise.
	to   net.Addr
	toAP netip.AddrPort
	// room is what anti-amplification allows on that path: three times
	// the probe datagram.
	room int
	// from is our address the probe was sent to (a server's, when its
	// socket reports it).
	from netip.Addr
}

// pathState is the network path of the connection: the peer's address,
// where we send from, the datagram being processed, a client's added
// paths and the validation of the peer's address after a migration.
// Guarded by Conn.mu.
type pathState struct {
	remote   net.Addr       // the peer's current address
	remoteAP netip.AddrPort // remote, unmapped; invalid when it is not UDP
	sendT    *Transport     // the Transport we send from: Conn.t until a Path.Switch
	rx       rxPath         // the datagram being processed
	extra    []*Path        // client: paths added by AddPath
	added    int            // client: AddPath calls, numbering the paths' qlog tuples
	// responses are the PATH_RESPONSE frames we owe.
	responses []pathResponse
	migration migrationState
}

// migrationState is the validation of the peer's current address after a
// migration.
type migrationState struct {
	validating bool
	open       [maxOpenChallenges][8]byte // outstanding PATH_CHALLENGE payloads
	nOpen      int
	// sendChallenge says a PATH_CHALLENGE is due; resendAt when the next
	// one is (a lost challenge is not retransmitted as such).
	sendChallenge bool
	resendAt      time.Time
	deadline      time.Time // validation fails at
	// prev is the last validated peer address, to fall back to, and
	// prevLocal our address on that path.
	prev      net.Addr
	prevAP    netip.AddrPort
	prevLocal netip.Addr
	// recv and sent count bytes on the unvalidated address: we send at
	// most three times what came from it (RFC 9000 section 9.3).
	recv, sent uint64
	// lastDCID is the Destination Connection ID the peer last used on the
	// current path: a peer that migrates with the same ID is behind a NAT
	// rebinding, one that changes it expects us to change ours too.
	lastDCID [20]byte
	dcidLen  int
}

// rxPath is where the datagram being processed came from.
type rxPath struct {
	from   netip.AddrPort // unmapped; invalid when the address is not UDP
	remote net.Addr       // may be nil until needed
	other  bool           // on a path other than the current one
	local  netip.Addr     // our address it was sent to, when known
	via    *Transport     // the Transport it came in on, when known
	size   int
	ecn    protocol.ECN
	// nonProbing is set when the packet being processed carries a frame
	// other than PATH_CHALLENGE, PATH_RESPONSE, NEW_CONNECTION_ID and
	// PADDING (RFC 9000 section 9.1).
	nonProbing bool
}

// noteSource records the sender of datagram p before its packets are
// processed; *local is our address on the current path (noteLocal).
func (ps *pathState) noteSource(p *receivedPacket, isClient bool, local *netip.Addr) {
	from := p.addrPort
	if !from.IsValid() && p.remote != nil {
		from, _ = addrPort(p.remote)
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	ps.rx = rxPath{from: from, remote: p.remote, size: len(p.data), ecn: p.ecn, local: p.local, via: p.via}
	ps.rx.other = ps.remoteAP.IsValid() && from.IsValid() && from != ps.remoteAP
	ps.noteLocal(isClient, local)
	if ps.migration.validating && !ps.rx.other {
		ps.migration.recv += uint64(len(p.data))
	}
}

// rxRemote returns the sender of the datagram being processed as a net.Addr.
func (ps *pathState) rxRemote() net.Addr {
	if ps.rx.remote == nil {
		ps.rx.remote = net.UDPAddrFromAddrPort(ps.rx.from)
	}
	return ps.rx.remote
}

// onPathChallenge queues the PATH_RESPONSE, for the path the challenge
// came on (RFC 9000 section 8.2.2).
func (ps *pathState) onPathChallenge(data [8]byte, isClient bool) {
	if p := ps.pathOn(isClient, ps.rx.via); p != nil {
		// A client's path the connection does not send on: the answer
		// goes from that path's socket (sendPathProbes).
		if len(p.responses) < maxPathResponses {
			p.responses = append(p.responses, data)
		}
		return
	}
	if len(ps.responses) >= maxPathResponses {
		return
	}
	r := pathResponse{data: data}
	if ps.rx.other {
		r.to, r.toAP, r.room, r.from = ps.rxRemote(), ps.rx.from, 3*ps.rx.size, ps.rx.local
	}
	ps.responses = append(ps.responses, r)
}

// onPathResponse completes the validation a matching PATH_RESPONSE answers,
// whichever path it came on (RFC 9000 section 8.2.3), or the probe
// challenge of pa it answers.
func (ps *pathState) onPathResponse(data [8]byte, pa *preferredAddressState) {
	if len(ps.extra) > 0 {
		ps.validatedBy(data)
	}
	if !ps.migration.validating {
		pa.onProbeResponse(data)
		return
	}
	for _, d := range ps.migration.open[:ps.migration.nOpen] {
		if d == data {
			ps.migration.validating = false
			ps.migration.sendChallenge = false
			ps.migration.prev = nil
			return
		}
	}
}

// noteDCID records the Destination Connection ID of a packet from the
// current peer address.
func (m *migrationState) noteDCID(dcid []byte) {
	if m.dcidLen != len(dcid) || !bytes.Equal(m.lastDCID[:m.dcidLen], dcid) {
		m.dcidLen = copy(m.lastDCID[:], dcid)
	}
}

// migrateTo makes the sender of the datagram being processed the peer
// address and starts validating it.
func (c *Conn) migrateTo(dcid []byte, now time.Time) {
	to := c.path.rx.from
	if c.path.migration.validating && to == c.path.migration.prevAP && c.path.rx.local == c.path.migration.prevLocal {
		// Back on the address validated before: nothing to prove.
		c.path.remote, c.path.remoteAP, c.x.local = c.path.migration.prev, c.path.migration.prevAP, c.path.migration.prevLocal
		c.path.migration = migrationState{lastDCID: c.path.migration.lastDCID, dcidLen: c.path.migration.dcidLen}
		return
	}
	sameHost := to.Addr() == c.path.remoteAP.Addr() && c.path.rx.local == c.x.local
	if !c.path.migration.validating {
		c.path.migration.prev, c.path.migration.prevAP, c.path.migration.prevLocal = c.path.remote, c.path.remoteAP, c.x.local
	}
	c.path.remote, c.path.remoteAP = c.path.rxRemote(), to
	c.x.local = c.path.rx.local
	if c.trace != nil {
		c.trace.serverSwitch(to, c.t)
	}
	c.path.migration.dcidLen = copy(c.path.migration.lastDCID[:], dcid)
	c.path.migration.validating = true
	c.path.migration.nOpen = 0
	c.path.migration.sendChallenge = true
	c.path.migration.recv, c.path.migration.sent = uint64(c.path.rx.size), 0
	// Three PTOs, of the old path's estimate or a fresh one, whichever is
	// longer (RFC 9000 section 8.2.4).
	fresh := recovery.NewRTTStats(0)
	c.path.migration.deadline = now.Add(3 * max(c.loss.pto(), fresh.PTOBase()+c.loss.rec.RTT().MaxAckDelay()))
	if !sameHost {
		// Only a port change keeps the congestion state (RFC 9000 9.4),
		// and the path MTU.
		c.loss.onPathChanged(now)
		c.mtu.restart(now, c.baseDatagram, &c.send, &c.loss, c.hs.confirmed, c.hs.peerParams, mtuEnabled(c.config, c.t))
	}
	// A new peer address gets a new peer connection ID, or the two paths
	// could be linked (RFC 9000 section 9.5), also on a NAT rebinding
	// where the peer kept its ID (which RFC 9000 allows us to keep; quic-go
	// does not). With no spare ID we keep ours rather than lose the
	// connection.
	c.cids.switchPeer(c.t, c)
	if m := c.server.avMetrics(); m != nil {
		m.pathMigrations.Inc()
	}
	if c.x.pa.probeValidated(to, c.x.local) {
		// The peer answered the challenge we sent with our answer to its
		// probe from there: an address validated before (RFC 9000 9.3).
		c.path.migration.validating, c.path.migration.sendChallenge, c.path.migration.prev = false, false, nil
	}
	c.wake()
}

// timers fails a validation that ran out of time (failed), falling back
// to the last validated address (fellBack; *local is our address on the
// path), and schedules PATH_CHALLENGE resends. After a fall back the
// caller restarts the path state.
func (ps *pathState) timers(now time.Time, local *netip.Addr) (failed, fellBack bool) {
	m := &ps.migration
	if !m.validating {
		return false, false
	}
	if !now.Before(m.deadline) {
		if m.prev != nil {
			ps.remote, ps.remoteAP, *local = m.prev, m.prevAP, m.prevLocal
			fellBack = true
		}
		ps.migration = migrationState{}
		return true, fellBack
	}
	if !m.sendChallenge && !now.Before(m.resendAt) {
		m.sendChallenge = true
	}
	return false, false
}

// nextTimer is when the validation's next timer fires, or zero.
func (m *migrationState) nextTimer() time.Time {
	if !m.validating {
		return time.Time{}
	}
	if !m.sendChallenge && m.resendAt.Before(m.deadline) {
		return m.resendAt
	}
	return m.deadline
}

// pathSendLimit lowers limit to what anti-amplification allows towards an
// unvalidated peer address; 0 means nothing may be sent.
func (c *Conn) pathSendLimit(limit int) int {
	if !c.path.migration.validating {
		return limit
	}
	if 3*c.path.migration.recv <= c.path.migration.sent+minPacketRoom {
		return 0
	}
	return int(min(uint64(limit), 3*c.path.migration.recv-c.path.migration.sent))
}

// sendPathChallenge sends the due PATH_CHALLENGE of a migration in a
// datagram of its own, padded to full size (RFC 9000 section 8.2.1), ahead
// of everything else: the first datagram on the new path challenges it,
// even when congestion control or pacing holds back data and only an ACK
// would go out (the interop runner's rebind checks want exactly that).
func (c *Conn) sendPathChallenge(now time.Time) {
	limit := c.pathSendLimit(maxPacketSize)
	if limit < minPacketRoom || c.keys.app == nil || !c.keys.app.CanSend() {
		return
	}
	var data [8]byte
	_, _ = rand.Read(data[:])
	var frame [9]byte
	fb := wire.AppendFrame(frame[:0], &wire.Frame{Type: wire.FrameTypePathChallenge, PathData: data})
	d := c.buildPathDatagram(now, c.cids.dest, fb, limit, false)
	if d == nil {
		return
	}
	if c.path.migration.nOpen == maxOpenChallenges {
		copy(c.path.migration.open[:], c.path.migration.open[1:])
		c.path.migration.nOpen--
	}
	c.path.migration.open[c.path.migration.nOpen] = data
	c.path.migration.nOpen++
	c.path.migration.sendChallenge = false
	c.path.migration.resendAt = now.Add(c.loss.pto())
	c.path.migration.sent += uint64(len(d))
	c.send.pending = append(c.send.pending, outDatagram{b: d, pooled: true})
}

// appendPathFrames appends the PATH_RESPONSE frames owed on the current
// path; they make the datagram padded to full size (RFC 9000 section
// 8.2.2).
func (c *Conn) appendPathFrames(b []byte, maxEnd int, _ time.Time, p *sentPacket) []byte {
	kept := c.path.responses[:0]
	for _, r := range c.path.responses {
		if r.to != nil {
			kept = append(kept, r)
			continue
		}
		f := wire.Frame{Type: wire.FrameTypePathResponse, PathData: r.data}
		var fit bool
		if b, fit = appendIfFits(b, maxEnd, &f); !fit {
			kept = append(kept, r)
			continue
		}
		p.eliciting = true
		c.send.pad = true
	}
	c.path.responses = kept
	return b
}

// sendProbeResponses builds one datagram per PATH_RESPONSE owed to an
// address other than the peer's current one, addressed there, with a peer
// connection ID not used on the current path when the peer gave us one.
func (c *Conn) sendProbeResponses(now time.Time) {
	if c.keys.app == nil || !c.keys.app.CanSend() {
		return
	}
	kept := c.path.responses[:0]
	for _, r := range c.path.responses {
		if r.to == nil {
			kept = append(kept, r)
			continue
		}
		var frames [18]byte
		f := wire.Frame{Type: wire.FrameTypePathResponse, PathData: r.data}
		fb := wire.AppendFrame(frames[:0], &f)
		// Challenge the probing address in the same datagram, so that a
		// migration there is validated at once (preferred_address.go).
		fb = c.x.pa.appendProbeChallenge(fb, r.toAP, r.from)
		dcid := c.cids.dest
		if c.cids.remote != nil {
			if cid, _, ok := c.cids.remote.NextUnused(); ok {
				dcid = cid.Bytes()
			}
		}
		if c.trace != nil {
			c.trace.txTuple = c.trace.serverTuple(r.toAP, c.t)
		}
		d := c.buildPathDatagram(now, dcid, fb, min(r.room, maxPacketSize), false)
		if c.trace != nil {
			c.trace.txTuple = ""
		}
		if d != nil {
			c.send.pending = append(c.send.pending, outDatagram{b: d, pooled: true, to: r.to, via: c.path.transportTo(r.toAP), from: r.from})
		}
	}
	clear(c.path.responses[len(kept):])
	c.path.responses = kept
}

// buildPathDatagram builds a 1-RTT datagram to dcid holding only frame,
// padded to limit bytes; mtuProbe marks it as a path MTU probe of that
// size.
func (c *Conn) buildPathDatagram(now time.Time, dcid, frame []byte, limit int, mtuProbe bool) []byte {
	buf := getSendBuffer()
	pi, ok := c.buildPacket(&buf, spaceApp, limit, now, false, dcid, frame)
	if !ok {
		putSendBuffer(buf)
		return nil
	}
	if mtuProbe {
		pi.mtuProbe = true
		pi.sp.frames = append(pi.sp.frames, sentFrame{kind: sfMTUProbe, n: uint64(limit)})
	}
	c.send.pad = true
	d := c.finishDatagram(buf, []packetInfo{pi}, limit, now)
	if d == nil {
		putSendBuffer(buf)
	}
	return d
}
