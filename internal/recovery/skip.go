package recovery

import "math/rand/v2"

// A sender leaves a packet number unused now and then, so that a peer
// acknowledging packets it never received to speed up the sender (an
// optimistic ACK, RFC 9000 section 21.4) sooner or later acknowledges one
// of them: OnAckReceived refuses such an ACK with ErrUnsentPacketAcked
// (PROTOCOL_VIOLATION). The first skip comes within a few hundred packets;
// the spacing then doubles up to a few thousand, which keeps the cost (the
// peer acknowledges a gap at once) negligible on a long transfer.
const (
	minSkipPeriod = 256
	maxSkipPeriod = 8192
)

// PacketNumberSkipper chooses the packet numbers a sender skips. Each
// period of numbers holds one skipped number, drawn at random from its
// second half, so skips are at least half a period apart and cannot be
// foretold. The zero value never skips. It allocates nothing.
type PacketNumberSkipper struct {
	src    rand.Source // nil: the runtime's unpredictable generator
	period uint64      // length of the current period
	skipAt uint64      // the next number to skip; 0: skipping is off
}

// Start turns skipping on for numbers from 0. src draws the numbers to
// skip; nil uses math/rand/v2's top-level generator, which a peer cannot
// predict. A seeded source makes the choice reproducible in tests.
func (s *PacketNumberSkipper) Start(src rand.Source) {
	s.src = src
	s.period = minSkipPeriod
	s.skipAt = s.draw(0)
}

// draw returns the number to skip in the period starting at from.
func (s *PacketNumberSkipper) draw(from uint64) uint64 {
	half := s.period / 2
	var r uint64
	if s.src != nil {
		r = s.src.Uint64()
	} else {
		r = rand.Uint64()
	}
	return from + half + r%half // half is a power of two: uniform
}

// Next returns the packet number to send after pn: pn+1, or pn+2 when
// pn+1 is to stay unused. The recovery state learns of the gap when the
// packet after it is sent (OnPacketSent).
func (s *PacketNumberSkipper) Next(pn uint64) uint64 {
	next := pn + 1
	if s.skipAt == 0 || next < s.skipAt {
		return next
	}
	s.period = min(2*s.period, maxSkipPeriod)
	s.skipAt = s.draw(next + 1)
	return next + 1
}
