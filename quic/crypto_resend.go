package quic

// requeueCrypto marks every sent and unacknowledged CRYPTO byte lost, so a
// probe or the Initial after a Retry carries the whole flight again.
func (sp *pnSpace) requeueCrypto() {
	if hw := sp.crypto.SentHighWater(); hw > 0 {
		sp.crypto.OnLost(0, int(hw), false)
	}
}

// requeueHandshakeCrypto marks the unacknowledged CRYPTO data of the
// Initial and Handshake spaces that can still be sent lost, so that the
// next datagrams carry it again, coalesced.
func (c *Conn) requeueHandshakeCrypto() {
	for _, space := range [2]int{spaceInitial, spaceHandshake} {
		if c.canSealIn(space) {
			c.spaces[space].requeueCrypto()
		}
	}
}

// cryptoReceived returns how far the peer's CRYPTO data in this space has
// arrived: the offset read up to and the highest offset seen.
func (sp *pnSpace) cryptoReceived() [2]uint64 {
	if sp.cryptoIn == nil {
		return [2]uint64{}
	}
	return [2]uint64{sp.cryptoIn.ReadOffset(), sp.cryptoIn.HighestReceived()}
}

// maxEarlyFlightResends bounds how often a server resends its handshake
// flight ahead of its PTO (onClientInitialProbe); the amplification limit
// bounds the bytes as well.
const maxEarlyFlightResends = 8

// onClientInitialProbe handles an ack-eliciting client Initial that
// brought no new CRYPTO data (a retransmitted ClientHello, a PING): the
// client's probe timer fired, so it most likely lacks our Initial data,
// which it needs before anything else of ours is of use to it. The
// server resends its whole unacknowledged flight now rather than at its
// own, possibly much backed off, PTO (RFC 9002 6.2.3), a limited number
// of times per connection.
func (c *Conn) onClientInitialProbe() {
	sp := &c.spaces[spaceInitial]
	if c.hs.earlyFlightResends >= maxEarlyFlightResends || sp.crypto.SentHighWater() == 0 || sp.crypto.AllAcked() {
		return
	}
	c.hs.earlyFlightResends++
	c.requeueHandshakeCrypto()
}
