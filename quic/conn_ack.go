package quic

import "time"

// onPacketAcked releases what an acknowledged packet carried and reports
// whether it was sent marked ECT(0).
func (c *Conn) onPacketAcked(handle uint64) (ecnMarked bool) {
	p := c.sent[handle]
	if p == nil {
		return false
	}
	ecnMarked = p.ecn
	delete(c.sent, handle)
	defer c.putSentPacket(p)
	if p.space == spaceApp && c.app != nil && p.keyGen == c.app.Generation() {
		c.keyPhaseAcked = true
	}
	if p.ackLargest >= 0 {
		c.spaces[p.space].tracker.OnAckAcknowledged(uint64(p.ackLargest))
	}
	if p.ptoProbe {
		c.onPTOProbeAcked()
	}
	for _, f := range p.frames {
		switch f.kind {
		case sfCrypto:
			c.spaces[p.space].crypto.OnAcked(f.off, int(f.n), false)
		case sfStream:
			if s := c.streams[f.id]; s != nil {
				s.send.OnAcked(f.off, int(f.n), f.fin)
				c.chargeSend(s)
				s.signalWrite()
				c.maybeRemoveStream(s)
			}
		case sfResetStream:
			if s := c.streams[f.id]; s != nil {
				s.resetAcked = true
				c.maybeRemoveStream(s)
			}
		case sfStopSending:
			if s := c.streams[f.id]; s != nil {
				s.stopAcked = true
				c.maybeRemoveStream(s)
			}
		case sfRetireCID:
			c.cids.remote.OnRetireAcked(f.id)
		case sfMTUProbe:
			c.onMTUProbeAcked(int(f.n))
		}
	}
	return ecnMarked
}

// onPacketLost queues what a lost packet carried for retransmission.
func (c *Conn) onPacketLost(handle uint64, now time.Time) {
	p := c.sent[handle]
	if p == nil {
		return
	}
	delete(c.sent, handle)
	defer c.putSentPacket(p)
	c.onECNPacketLost(p)
	for _, f := range p.frames {
		switch f.kind {
		case sfCrypto:
			c.spaces[p.space].crypto.OnLost(f.off, int(f.n), false)
		case sfStream:
			if s := c.streams[f.id]; s != nil && s.sendErr == nil {
				s.send.OnLost(f.off, int(f.n), f.fin)
				c.queueStreamSend(s)
			}
		case sfResetStream:
			if s := c.streams[f.id]; s != nil && !s.resetAcked {
				s.resetPending = true
				c.queueStreamControl(s)
			}
		case sfStopSending:
			if s := c.streams[f.id]; s != nil && !s.stopAcked && !s.recvFinished() {
				s.stopPending = true
				c.queueStreamControl(s)
			}
		case sfMaxStreamData:
			if s := c.streams[f.id]; s != nil {
				s.maxDataLost = true
				c.queueStreamControl(s)
			}
		case sfMaxData:
			c.maxDataLost = true
		case sfMaxStreamsBidi:
			c.maxStreamsLost[0] = true
		case sfMaxStreamsUni:
			c.maxStreamsLost[1] = true
		case sfHandshakeDone:
			c.sendHandshakeDone = true
		case sfNewToken:
			c.sendNewToken = true
		case sfRetireCID:
			c.cids.remote.OnRetireLost(f.id)
		case sfNewCID:
			c.cids.local.OnNewConnectionIDLost(f.id)
		case sfMTUProbe:
			c.onMTUProbeLost(int(f.n), now)
		}
	}
}

// countLost adds the packets in c.events.Lost to the statistics, and the
// fates of large packets in c.events to black hole detection.
func (c *Conn) countLost(now time.Time) {
	for _, p := range c.events.Lost {
		c.stats.packetsLost++
		c.stats.bytesLost += uint64(p.Size)
		if !p.MTUProbe {
			c.onDatagramFate(p.Size, true, now)
		}
	}
	for _, p := range c.events.Acked {
		if !p.MTUProbe {
			c.onDatagramFate(p.Size, false, now)
		}
	}
}
