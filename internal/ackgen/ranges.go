package ackgen

import "github.com/turboretry/turboretry/internal/wire"

// rangeSet is the set of received packet numbers as disjoint, non-adjacent
// ranges in descending order (the order of an ACK frame), bounded in size.
// Packet numbers below floor have been forgotten; they count as received so
// that a forgotten packet can never be processed twice (RFC 9000 13.2.3).
type rangeSet struct {
	r     []wire.AckRange
	max   int
	floor uint64
}

// initialRanges is the capacity a range set starts with.
const initialRanges = 4

func (s *rangeSet) init(maxRanges int) {
	// Most connections never have more than a few gaps at once: the set
	// starts small and grows (once, up to maxRanges) when reordering or
	// loss asks for more.
	s.r = make([]wire.AckRange, 0, min(maxRanges, initialRanges))
	s.max = maxRanges
	s.floor = 0
}

// contains reports whether pn was received or forgotten.
func (s *rangeSet) contains(pn uint64) bool {
	if pn < s.floor {
		return true
	}
	for _, r := range s.r {
		if pn > r.Largest {
			return false
		}
		if pn >= r.Smallest {
			return true
		}
	}
	return false
}

// add records pn. It returns the index of the range now holding pn, or -1
// when pn was already present, below the floor, or immediately forgotten
// because the set is full and pn would have been its lowest range.
func (s *rangeSet) add(pn uint64) int {
	if pn < s.floor {
		return -1
	}
	n := len(s.r)
	// In-order arrival extends the newest range: the common case.
	if n > 0 && pn == s.r[0].Largest+1 {
		s.r[0].Largest = pn
		return 0
	}
	// i is the first range lying wholly below pn.
	i := 0
	for i < n && s.r[i].Largest >= pn {
		i++
	}
	if i > 0 && s.r[i-1].Smallest <= pn {
		return -1
	}
	joinAbove := i > 0 && s.r[i-1].Smallest == pn+1
	joinBelow := i < n && s.r[i].Largest+1 == pn
	switch {
	case joinAbove && joinBelow:
		s.r[i-1].Smallest = s.r[i].Smallest
		copy(s.r[i:], s.r[i+1:])
		s.r = s.r[:n-1]
		return i - 1
	case joinAbove:
		s.r[i-1].Smallest = pn
		return i - 1
	case joinBelow:
		s.r[i].Largest = pn
		return i
	}
	if n == s.max {
		if i == n {
			// pn is older than everything kept: forget it at once.
			s.floor = pn + 1
			return -1
		}
		s.floor = s.r[n-1].Largest + 1
		n--
		s.r = s.r[:n]
	}
	s.r = append(s.r, wire.AckRange{})
	copy(s.r[i+1:], s.r[i:n])
	s.r[i] = wire.AckRange{Smallest: pn, Largest: pn}
	return i
}

// forgetUpTo drops every packet number <= pn and raises the floor past it.
func (s *rangeSet) forgetUpTo(pn uint64) {
	if pn >= MaxPacketNumber {
		pn = MaxPacketNumber
	}
	if pn+1 <= s.floor {
		return
	}
	s.floor = pn + 1
	n := len(s.r)
	for n > 0 && s.r[n-1].Largest <= pn {
		n--
	}
	s.r = s.r[:n]
	if n > 0 && s.r[n-1].Smallest <= pn {
		s.r[n-1].Smallest = pn + 1
	}
}
