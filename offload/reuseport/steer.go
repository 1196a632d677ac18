package reuseport

import (
	"github.com/turboretry/turboretry/internal/siphash"
	"github.com/turboretry/turboretry/quiclb"
)

// Reason says how a datagram's worker was chosen; it indexes the
// program's counters (enum tr_rp_reason of bpf/steer.bpf.c).
type Reason uint8

// Reasons, in the order of the C enum.
const (
	// Steered: the worker index in one of the server's IDs.
	Steered Reason = iota
	// Hashed: a client-chosen long-header DCID, by its hash.
	Hashed
	// Undecodable: a short header without a server ID; default choice.
	Undecodable
	// Truncated: too short for a QUIC header; default choice.
	Truncated
	// NoSocket: no socket at the chosen index; default choice.
	NoSocket
	numReasons
)

const (
	longHeaderLen = 6 // first byte, version, DCID length
	maxCIDLen     = quiclb.MaxLen
)

// steering is the Go twin of the program's rules, for datagrams that do
// not pass through the sockets (WorkerFor) and for tests.
type steering struct {
	ids     *quiclb.Codec
	k0, k1  uint64 // hash key of client-chosen DCIDs
	workers [quiclb.Generations]int
	current int // the generation that takes new connections
}

// slot is a socket's index in the program's socket map: the worker octet
// of its IDs.
func slot(generation, worker int) int { return generation<<7 | worker }

// serverSlot is server_slot of the C program: the slot named by one of the
// server's IDs, or -1.
func (s *steering) serverSlot(cid []byte) int {
	var octet byte
	var ok bool
	if s.ids.HasMAC() {
		octet, ok = s.ids.WorkerOctet(cid)
	} else if len(cid) == s.ids.Len() && cid[0] == quiclb.FirstOctet(s.ids.ConfigID(), s.ids.Len()) {
		octet, ok = cid[s.ids.WorkerOffset()], true
	}
	if !ok || int(octet&0x7f) >= s.workers[octet>>7] {
		return -1
	}
	return int(octet)
}

// pick returns the socket slot of a UDP payload, or -1 with the reason
// when the kernel's default choice applies. It mirrors tr_steer line by
// line.
func (s *steering) pick(p []byte) (int, Reason) {
	if len(p) < 1+maxCIDLen {
		return -1, Truncated
	}
	workers := s.workers[s.current]
	if workers < 1 {
		return -1, NoSocket
	}
	n := s.ids.Len()
	if p[0]&0x80 == 0 {
		if w := s.serverSlot(p[1 : 1+n]); w >= 0 {
			return w, Steered
		}
		return -1, Undecodable
	}
	dlen := int(p[5])
	if dlen > maxCIDLen || len(p) < longHeaderLen+maxCIDLen {
		return -1, Truncated
	}
	dcid := p[longHeaderLen : longHeaderLen+dlen]
	if dlen == n {
		if w := s.serverSlot(dcid); w >= 0 {
			return w, Steered
		}
	}
	return slot(s.current, int(siphash.Sum64(s.k0, s.k1, dcid)%uint64(workers))), Hashed
}
