package recovery

import (
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/protocol"
)

// maxPacketNumber bounds packet numbers (RFC 9000 section 12.3).
const maxPacketNumber = 1<<62 - 1

// Config configures a Recovery.
type Config struct {
	// IsServer selects the server's view of address validation: a server
	// never needs the client's anti-deadlock probe.
	IsServer bool
	// InitialRTT is assumed before the first sample; 0 means
	// DefaultInitialRTT.
	InitialRTT time.Duration
	// MaxDatagramSize is the datagram size for the congestion controller;
	// 0 means congestion.DefaultMaxDatagramSize.
	MaxDatagramSize int
	// NewController builds the congestion controller from the estimator
	// the Recovery owns. nil means NewReno.
	NewController func(rtt congestion.RTTSource, maxDatagramSize int) congestion.Controller
	// IdleTimeout is the idle timeout in force (see SetIdleTimeout); 0
	// means none bounds the PTO backoff.
	IdleTimeout time.Duration
}

// spaceState is the loss detection state of one packet number space.
type spaceState struct {
	sent                 sentQueue
	hasLargestAcked      bool
	largestAcked         uint64
	lossTime             time.Time // when the time threshold next declares a loss
	lastAckElicitingSent time.Time
	ackElicitingInFlight int
	bytesInFlight        int
	discarded            bool
}

// Recovery is the loss detector of one connection. It is not safe for
// concurrent use; the connection's goroutine owns it.
type Recovery struct {
	isServer bool
	rtt      RTTStats
	cc       congestion.Controller
	newCC    func() congestion.Controller // builds cc afresh for a new path
	spaces   [protocol.NumSpaces]spaceState
	reorder  reordering // adaptive thresholds, spurious loss detection

	bytesInFlight int
	ptoCount      int
	timer         time.Time
	idleTimeout   time.Duration // bounds the PTO backoff; 0: no bound

	handshakeConfirmed   bool
	hasHandshakeKeys     bool
	handshakeAckReceived bool // client: the server proved it validated us
	amplificationLimited bool
	// sampledSent is the send time of the latest packet an RTT sample
	// was taken from, in any space: a packet sent before it gives no
	// sample when it is acknowledged later (it waited for keys, or its
	// acknowledgment did), as in quic-go.
	sampledSent time.Time

	scratch Events // used when a caller passes nil Events
}

// New returns a loss detector with an empty history in every space.
func New(cfg Config) *Recovery {
	r := &Recovery{isServer: cfg.IsServer, rtt: NewRTTStats(cfg.InitialRTT), reorder: newReordering(), idleTimeout: cfg.IdleTimeout}
	mds := cfg.MaxDatagramSize
	if mds <= 0 {
		mds = congestion.DefaultMaxDatagramSize
	}
	r.newCC = func() congestion.Controller {
		if cfg.NewController != nil {
			if cc := cfg.NewController(&r.rtt, mds); cc != nil {
				return cc
			}
		}
		return congestion.NewNewReno(&r.rtt, mds)
	}
	r.cc = r.newCC()
	return r
}

// ReleaseIdle gives back the storage of the spaces with no packet
// tracked, for an idle connection; the next packet sent allocates it
// again. A space whose only outstanding packets carry nothing but ACK
// frames counts as empty: the peer acknowledges those only along with a
// later ack-eliciting packet, which an idle connection does not send, so
// they would keep the ring forever. Forgetting them loses nothing: they
// are not in flight, carry no frames to declare lost, and a late ACK of
// their numbers acknowledges nothing new.
func (r *Recovery) ReleaseIdle() {
	for i := range r.spaces {
		s := &r.spaces[i]
		if s.lossTime.IsZero() && s.sent.onlyAckOnlyOutstanding() {
			s.sent.release()
		}
	}
}

// OnECNCongestion reacts to an increase of the peer's CE count in an ACK
// frame whose largest newly acknowledged packet was sent at sentTime: a
// congestion event, without loss (RFC 9002 section 7.1).
func (r *Recovery) OnECNCongestion(now, sentTime time.Time) {
	r.cc.OnCongestionEvent(now, sentTime)
}

// OnPathChanged restarts the RTT estimate and the congestion controller,
// as a move to a new peer address requires (RFC 9000 section 9.4): what
// was learned about the old path says nothing about the new one, its
// reordering included. Packets in flight stay tracked and are acknowledged
// or declared lost as usual.
func (r *Recovery) OnPathChanged(now time.Time) {
	mad := r.rtt.MaxAckDelay()
	r.rtt = NewRTTStats(r.rtt.initial)
	r.rtt.SetMaxAckDelay(mad)
	r.cc = r.newCC()
	r.reorder.resetThresholds()
	r.ptoCount = 0
	r.setTimer(now)
}

// SetIdleTimeout sets the idle timeout in force, which bounds the PTO
// backoff: probes stay at most a quarter of it apart, so a peer that
// counts its idle timeout from our last packet gets several before it
// gives up. The timer already armed keeps its time.
func (r *Recovery) SetIdleTimeout(d time.Duration) { r.idleTimeout = d }

// RTT returns the RTT estimator.
func (r *Recovery) RTT() *RTTStats { return &r.rtt }

// Controller returns the congestion controller Recovery drives.
func (r *Recovery) Controller() congestion.Controller { return r.cc }

// BytesInFlight returns the bytes of in-flight packets neither acked, lost
// nor discarded.
func (r *Recovery) BytesInFlight() int { return r.bytesInFlight }

// CanSend reports whether the congestion window allows another packet.
// Probe packets the timer asks for are sent regardless.
func (r *Recovery) CanSend() bool { return r.cc.CanSend(r.bytesInFlight) }

// PTOCount returns the number of probe timeouts since the last ACK that
// reset the backoff.
func (r *Recovery) PTOCount() int { return r.ptoCount }

// LargestAcked returns the largest packet number the peer acknowledged in
// a space, which packet number encoding needs (RFC 9000 section 17.1).
func (r *Recovery) LargestAcked(space protocol.PacketNumberSpace) (uint64, bool) {
	if !space.Valid() {
		return 0, false
	}
	s := &r.spaces[space]
	return s.largestAcked, s.hasLargestAcked
}

// SetMaxAckDelay records the peer's max_ack_delay transport parameter.
func (r *Recovery) SetMaxAckDelay(d time.Duration) { r.rtt.SetMaxAckDelay(d) }

// SetMaxDatagramSize passes a new datagram size to the controller.
func (r *Recovery) SetMaxDatagramSize(size int) { r.cc.SetMaxDatagramSize(size) }

// SetHandshakeConfirmed records handshake confirmation (RFC 9001 section
// 4.1.2): ack delays are capped from now on, ApplicationData packets get a
// PTO, and the client no longer needs anti-deadlock probes.
func (r *Recovery) SetHandshakeConfirmed(now time.Time) {
	r.handshakeConfirmed = true
	r.setTimer(now)
}

// SetHandshakeKeys records that Handshake keys are installed, which moves
// a client's anti-deadlock probe from Initial to Handshake.
func (r *Recovery) SetHandshakeKeys(now time.Time) {
	r.hasHandshakeKeys = true
	r.setTimer(now)
}

// SetAmplificationLimited tells a server whether the anti-amplification
// limit blocks it from sending; while it does, the PTO is not armed
// (RFC 9002 section 6.2.2.1). Call it again with false when a datagram
// from the client lifts the limit.
func (r *Recovery) SetAmplificationLimited(limited bool, now time.Time) {
	r.amplificationLimited = limited
	r.setTimer(now)
}

// OnPacketSent records a sent packet (RFC 9002 appendix A.5). Packet
// numbers must increase within a space; gaps are remembered as skipped
// numbers that the peer must never acknowledge.
func (r *Recovery) OnPacketSent(space protocol.PacketNumberSpace, p SentPacket) error {
	if !space.Valid() {
		return ErrInvalidSpace
	}
	s := &r.spaces[space]
	switch {
	case s.discarded:
		return ErrSpaceDiscarded
	case p.Size < 0 || p.Number > maxPacketNumber:
		return ErrInvalidPacket
	case s.sent.anySent && p.Number <= s.sent.largestSent:
		return ErrPacketNumberNotIncreasing
	}
	p.state = stateOutstanding
	s.sent.push(p)
	if !p.InFlight {
		return nil
	}
	s.bytesInFlight += p.Size
	r.bytesInFlight += p.Size
	if p.AckEliciting {
		s.ackElicitingInFlight++
		s.lastAckElicitingSent = p.TimeSent
	}
	r.cc.OnPacketSent(p.TimeSent, p.Size, r.bytesInFlight)
	r.setTimer(p.TimeSent)
	return nil
}

// DiscardSpace drops the state of the Initial or Handshake space when its
// keys are discarded (RFC 9002 section 6.4): its packets leave bytes in
// flight without counting as acked or lost, and the PTO backoff restarts.
func (r *Recovery) DiscardSpace(space protocol.PacketNumberSpace, now time.Time) error {
	if !space.Valid() {
		return ErrInvalidSpace
	}
	if space == protocol.SpaceAppData {
		return ErrCannotDiscardApplicationData
	}
	s := &r.spaces[space]
	if s.discarded {
		return nil
	}
	r.bytesInFlight -= s.bytesInFlight
	s.sent.release() // a discarded space sends nothing more
	s.bytesInFlight = 0
	s.ackElicitingInFlight = 0
	s.lossTime = time.Time{}
	s.lastAckElicitingSent = time.Time{}
	s.discarded = true
	if space == protocol.SpaceHandshake {
		// Handshake keys are dropped on confirmation; whoever discards
		// them had them.
		r.hasHandshakeKeys = true
	}
	r.ptoCount = 0
	r.setTimer(now)
	return nil
}

// removeFromFlight updates the in-flight accounting for a packet that was
// just acked or declared lost.
func (r *Recovery) removeFromFlight(s *spaceState, p *SentPacket) {
	if !p.InFlight {
		return
	}
	s.bytesInFlight -= p.Size
	r.bytesInFlight -= p.Size
	if p.AckEliciting {
		s.ackElicitingInFlight--
	}
}

// peerCompletedAddressValidation reports whether the peer has validated
// our address: always for a server (clients validate implicitly), and for a
// client once a Handshake ACK arrived or the handshake is confirmed.
func (r *Recovery) peerCompletedAddressValidation() bool {
	return r.isServer || r.handshakeAckReceived || r.handshakeConfirmed
}

func (r *Recovery) ackElicitingInFlight() bool {
	for i := range r.spaces {
		if r.spaces[i].ackElicitingInFlight > 0 {
			return true
		}
	}
	return false
}
