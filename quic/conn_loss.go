package quic

import (
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/recovery"
)

// lossState is loss detection and congestion control (RFC 9002) and the
// packets in flight it tracks. Guarded by Conn.mu.
type lossState struct {
	rec    *recovery.Recovery
	pacer  *congestion.Pacer
	events recovery.Events // scratch: what one ACK or timeout acknowledged and lost
	// sent is the ack-eliciting packets in flight by handle, the number
	// recovery knows them by (nextHandle is the last one given out);
	// freeSent keeps released ones for reuse.
	sent       sentPackets
	freeSent   []*sentPacket
	nextHandle uint64
}

// pacingRTT is the RTT the pacer spreads a window over: none (no pacing)
// before the first sample, as in quic-go, so that the first flight, 0-RTT
// data included, is limited by the initial window alone.
func (l *lossState) pacingRTT() time.Duration {
	if !l.rec.RTT().HasSample() {
		return 0
	}
	return l.rec.RTT().SmoothedRTT()
}

// pto is the probe timeout (RFC 9002 section 6.2.1) without backoff.
func (l *lossState) pto() time.Duration {
	rtt := l.rec.RTT()
	return rtt.PTOBase() + rtt.MaxAckDelay()
}

// onPacketAcked releases what an acknowledged packet carried and reports
// whether it was sent marked ECT(0).
func (c *Conn) onPacketAcked(handle uint64) (ecnMarked bool) {
	p := c.loss.sent.remove(handle)
	if p == nil {
		return false
	}
	ecnMarked = p.ecn
	defer c.putSentPacket(p)
	if p.space == spaceApp && c.keys.app != nil && p.keyGen == c.keys.app.Generation() {
		c.keys.phaseAcked = true
	}
	if p.ackLargest >= 0 {
		c.spaces[p.space].tracker.OnAckAcknowledged(uint64(p.ackLargest))
	}
	if p.ptoProbe {
		c.mtu.onPTOProbeAcked(c.send.maxDatagram, c.baseDatagram)
	}
	for _, f := range p.frames {
		switch f.kind {
		case sfCrypto:
			c.spaces[p.space].crypto.OnAcked(f.off, int(f.n), false)
		case sfStream:
			if s := c.streams.all[f.id]; s != nil {
				s.send.OnAcked(f.off, int(f.n), f.fin)
				c.budget.charge(s)
				if !s.drainWaiting {
					// A Write waiting in drainLocked waits for its data
					// to be packed, which an acknowledgement does not
					// change: waking it would only have it take mu
					// and sleep again, once per ACK the loop handles.
					s.signalWrite()
				}
				s.maybeRemove()
			}
		case sfResetStream:
			if s := c.streams.all[f.id]; s != nil && f.off == s.resetReliable {
				s.resetAcked = true
				s.maybeRemove()
			}
		case sfStopSending:
			if s := c.streams.all[f.id]; s != nil {
				s.stopAcked = true
				s.maybeRemove()
			}
		case sfRetireCID:
			c.cids.remote.OnRetireAcked(f.id)
		case sfMTUProbe:
			c.mtu.onProbeAcked(int(f.n), &c.send, &c.loss, c.trace)
		}
	}
	return ecnMarked
}

// onPacketLost queues what a lost packet carried for retransmission.
func (c *Conn) onPacketLost(handle uint64, now time.Time) {
	p := c.loss.sent.remove(handle)
	if p == nil {
		return
	}
	defer c.putSentPacket(p)
	c.ecn.onPacketLost(p)
	c.requeueFrames(p, now)
}

// requeueFrames schedules again what the frames of a lost packet carried.
// A zero now means the packet is not known to be lost (a PTO resends it):
// an MTU probe in it is then left alone.
func (c *Conn) requeueFrames(p *sentPacket, now time.Time) {
	for _, f := range p.frames {
		switch f.kind {
		case sfCrypto:
			c.spaces[p.space].crypto.OnLost(f.off, int(f.n), false)
		case sfStream:
			c.streams.requeueFrame(f)
		case sfResetStream:
			if s := c.streams.all[f.id]; s != nil && !s.resetAcked && f.off == s.resetReliable {
				s.resetPending = true
				s.queueControl()
			}
		case sfStopSending:
			if s := c.streams.all[f.id]; s != nil && !s.stopAcked && !s.recvFinished() {
				s.stopPending = true
				s.queueControl()
			}
		case sfMaxStreamData:
			if s := c.streams.all[f.id]; s != nil {
				s.maxDataLost = true
				s.queueControl()
			}
		case sfMaxData:
			c.flow.maxDataLost = true
		case sfMaxStreamsBidi:
			c.streams.maxStreamsLost[0] = true
		case sfMaxStreamsUni:
			c.streams.maxStreamsLost[1] = true
		case sfHandshakeDone:
			c.hs.sendDone = true
		case sfNewToken:
			c.tokens.sendIssued = true
		case sfRetireCID:
			c.cids.remote.OnRetireLost(f.id)
		case sfNewCID:
			c.cids.local.OnNewConnectionIDLost(f.id)
		case sfMTUProbe:
			if !now.IsZero() {
				c.mtu.onProbeLost(int(f.n), now, c.loss.pto(), c.trace)
			}
		}
	}
}

// requeueData schedules again the stream data a packet carried, and
// nothing else it carried; it reports whether the packet had any.
func (ss *streamSet) requeueData(p *sentPacket) bool {
	found := false
	for _, f := range p.frames {
		if f.kind == sfStream {
			ss.requeueFrame(f)
			found = true
		}
	}
	return found
}

// requeueFrame schedules the data of a sent STREAM frame again, unless
// its stream is gone or was reset before that data.
func (ss *streamSet) requeueFrame(f sentFrame) {
	if s := ss.all[f.id]; s != nil && (s.sendErr == nil || s.resetReliable > 0) {
		s.send.OnLost(f.off, int(f.n), f.fin)
		s.queueSend()
	}
}

// takeOldestData returns the n oldest unacknowledged 1-RTT packets (at
// most two; nil for none) with frames to resend that no PTO took before,
// and marks them taken. A PTO queues what they carried (stream data,
// HANDSHAKE_DONE, control frames) for sending again, without declaring
// them lost: a PTO probe that has no new data to carry resends the oldest
// (RFC 9002 section 6.2.4), else a lost last flight (a whole response,
// say, or the HANDSHAKE_DONE while the ACKs that would declare it lost keep
// getting lost) would only ever be probed with PINGs that the peer answers
// with ACKs alone. A taken packet stays in flight, so the next PTO must
// pass over it: taking the oldest again would resend the same frames at
// every PTO and never what was sent after them (the response that
// followed a lost HANDSHAKE_DONE). The copy a probe sent is a packet of
// its own, which a later PTO may take. An ACK of the original packets
// that arrives later cancels the resend.
func (l *lossState) takeOldestData(n int) [2]*sentPacket {
	var ps [2]*sentPacket
	taken := 0
	for _, p := range l.sent.all() { // oldest first
		if taken == min(max(n, 1), len(ps)) {
			break
		}
		if p.space != spaceApp || p.resent || !p.hasResendable() {
			continue
		}
		p.resent = true
		ps[taken] = p
		taken++
	}
	return ps
}

// appInFlight reports whether an ack-eliciting 1-RTT (or 0-RTT) packet is
// in flight.
func (l *lossState) appInFlight() bool {
	for _, p := range l.sent.all() {
		if p.space == spaceApp {
			return true
		}
	}
	return false
}

// countLost adds the packets in l.events.Lost to the statistics, and the
// fates of large packets in l.events to black hole detection (mtu, with
// base the size to fall back to).
func (l *lossState) countLost(now time.Time, stats *connStats, mtu *mtuDiscovery, base int, send *sendState) {
	for _, p := range l.events.Lost {
		stats.packetsLost++
		stats.bytesLost += uint64(p.Size)
		if !p.MTUProbe {
			mtu.onDatagramFate(p.Size, true, now, base, send, l)
		}
	}
	for _, p := range l.events.Acked {
		if !p.MTUProbe {
			mtu.onDatagramFate(p.Size, false, now, base, send, l)
		}
	}
}

// onPathChanged forgets what was learned about the path: RTT, congestion
// window and pacing start over (RFC 9000 9.4); the path MTU too
// (mtuDiscovery.restart).
func (l *lossState) onPathChanged(now time.Time) {
	l.rec.OnPathChanged(now)
	l.pacer = congestion.NewPacer(congestion.DefaultMaxDatagramSize)
}
