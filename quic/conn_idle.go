package quic

import "time"

// idleState is what the idle timeout and keep-alive count from (RFC 9000
// section 10.1). Guarded by mu.
type idleState struct {
	// lastActivity is the last receipt, or the first ack-eliciting packet
	// sent after one (ackElicitingSent says one went); lastSendOrRecv is
	// the last datagram either way.
	lastActivity     time.Time
	ackElicitingSent bool
	lastSendOrRecv   time.Time
}

// timeout is the idle timeout in force: the handshake idle timeout until
// the handshake completed, then the smaller of ours and the peer's, and
// at least three PTOs (RFC 9000 section 10.1).
func (s *idleState) timeout(conf *Config, hs *handshakeState, loss *lossState) time.Duration {
	if !hs.complete {
		return conf.HandshakeIdleTimeout
	}
	d := conf.MaxIdleTimeout
	if hs.peerParams != nil && hs.peerParams.MaxIdleTimeout > 0 && hs.peerParams.MaxIdleTimeout < d {
		d = hs.peerParams.MaxIdleTimeout
	}
	return max(d, 3*loss.pto())
}

// deadline is when the connection times out if nothing happens.
func (s *idleState) deadline(conf *Config, hs *handshakeState, loss *lossState) time.Time {
	return s.lastActivity.Add(s.timeout(conf, hs, loss))
}

// handshakeDeadline is when an incomplete handshake fails: twice the
// handshake idle timeout after the connection started; zero once complete.
func (s *idleState) handshakeDeadline(conf *Config, hs *handshakeState, started time.Time) time.Time {
	if hs.complete {
		return time.Time{}
	}
	return started.Add(2 * conf.HandshakeIdleTimeout)
}

// keepAliveAt is when a PING is due to keep the connection alive; zero
// when none is (no keep-alive, no complete handshake, or one is pending).
func (s *idleState) keepAliveAt(conf *Config, hs *handshakeState, pingPending bool, loss *lossState) time.Time {
	if conf.KeepAlivePeriod <= 0 || !hs.complete || pingPending {
		return time.Time{}
	}
	p := min(conf.KeepAlivePeriod, s.timeout(conf, hs, loss)/2)
	return s.lastSendOrRecv.Add(p)
}
