package quic

import "iter"

// sentPackets holds the frames of the ack-eliciting packets in flight by
// handle, the number loss recovery knows a packet by. Handles are given
// out one per packet sent, in increasing order, and packets mostly leave
// (acknowledged or lost) in the order they were sent, so a ring indexed by
// handle does what a map would without hashing, and without allocating
// once it has grown to the window in flight. It spans the handles from
// the oldest packet held to the newest; handles in between that left, or
// were never held (packets that elicit no ACK), are empty slots. So it
// spans the packets sent since the oldest one still in flight, which loss
// detection bounds as it bounds its own queues (internal/recovery's
// sentQueue keeps every packet of a space from its oldest outstanding
// one): a packet is acknowledged or declared lost within a few RTTs, or
// its space is dropped.
type sentPackets struct {
	ring  []*sentPacket // len is zero or a power of two; slot: handle & (len-1)
	first uint64        // the oldest handle held (when count > 0)
	end   uint64        // one past the newest handle held (when count > 0)
	count int
}

// minSentRing is the first ring's size: a handshake sends a few packets,
// and a transfer doubles it to its window once.
const minSentRing = 16

// get returns the packet of handle h, nil if none is held.
func (s *sentPackets) get(h uint64) *sentPacket {
	if s.count == 0 || h < s.first || h >= s.end {
		return nil
	}
	return s.ring[h&uint64(len(s.ring)-1)]
}

// add holds p as the packet of handle h. Handles normally come in
// increasing order; an older one widens the span backwards.
func (s *sentPackets) add(h uint64, p *sentPacket) {
	first, end := h, h+1
	if s.count > 0 {
		first, end = min(s.first, h), max(s.end, h+1)
	}
	if end-first > uint64(len(s.ring)) {
		s.grow(end - first)
	}
	slot := &s.ring[h&uint64(len(s.ring)-1)]
	if *slot == nil {
		s.count++
	}
	*slot = p
	s.first, s.end = first, end
}

// grow moves the held packets to a ring of at least span slots.
func (s *sentPackets) grow(span uint64) {
	size := uint64(max(minSentRing, len(s.ring)))
	for size < span {
		size *= 2
	}
	ring := make([]*sentPacket, size)
	for h, p := range s.all() {
		ring[h&(size-1)] = p
	}
	s.ring = ring
}

// remove forgets the packet of handle h and returns it, nil if none was
// held.
func (s *sentPackets) remove(h uint64) *sentPacket {
	p := s.get(h)
	if p == nil {
		return nil
	}
	s.ring[h&uint64(len(s.ring)-1)] = nil
	s.count--
	switch {
	case s.count == 0:
		s.first = s.end
	case h == s.first:
		mask := uint64(len(s.ring) - 1)
		for s.ring[s.first&mask] == nil {
			s.first++
		}
	case h == s.end-1:
		mask := uint64(len(s.ring) - 1)
		for s.ring[(s.end-1)&mask] == nil {
			s.end--
		}
	}
	return p
}

// all yields the held packets, oldest first. The loop may remove the
// packet it is given, but add nothing.
func (s *sentPackets) all() iter.Seq2[uint64, *sentPacket] {
	return func(yield func(uint64, *sentPacket) bool) {
		if s.count == 0 {
			return
		}
		for h, end := s.first, s.end; h < end; h++ {
			if p := s.ring[h&uint64(len(s.ring)-1)]; p != nil && !yield(h, p) {
				return
			}
		}
	}
}

// len is the number of packets held.
func (s *sentPackets) len() int { return s.count }

// clear forgets every packet, keeping the ring for reuse.
func (s *sentPackets) clear() {
	clear(s.ring)
	s.count, s.first, s.end = 0, 0, 0
}

// releaseIfEmpty gives the ring back when nothing is in flight (an idle
// connection), so that it holds no memory for its last transfer's window.
func (s *sentPackets) releaseIfEmpty() {
	if s.count == 0 {
		s.ring = nil
	}
}
