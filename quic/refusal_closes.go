package quic

import (
	"hash/maphash"
	"sync"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
)

// A refused connection attempt usually brings more than one Initial: a
// ClientHello with a post-quantum key share spans two datagrams with the
// same connection IDs, and a client whose close got lost retransmits.
// Sealing each close derives the Initial keys of the client's DCID again
// (an AES key schedule and its allocations), the main cost of refusing a
// flood. refusalCloses keeps the closes sent last, sealed, so the later
// Initials of an attempt get the same packet again (RFC 9000 section
// 10.2.3 allows repeating a close; to a client that got the first one it
// is a duplicate). It lives in the listener, not in stateless.Responder,
// which the offload agent shares and which stays stateless.

const (
	// refusalCloseSlots is the table's size: direct-mapped, so an
	// attacker's spray of connection IDs evicts, never grows it. At two
	// to four Initials per attempt arriving within a round trip, a slot
	// needs to outlive only the few hundred attempts refused meanwhile.
	refusalCloseSlots = 1024
	// refusalKeyLen: version, error code, and both connection IDs after
	// their lengths, zero-padded to the longest.
	refusalKeyLen = 4 + 8 + 1 + wire.MaxConnIDLen + 1 + wire.MaxConnIDLen
)

// A slot's length byte holds any stateless close.
var _ [255 - stateless.MaxCloseLen]struct{}

// refusalKey identifies one connection attempt's close: equal keys give
// byte-identical closes (AppendClose is deterministic: packet number 0,
// no reason phrase, keys from the DCID and version).
type refusalKey [refusalKeyLen]byte

// refusalSlot is one sealed close and its key; n 0 is an empty slot.
type refusalSlot struct {
	key   refusalKey
	n     uint8
	close [stateless.MaxCloseLen]byte
}

// refusalClosesBytes is the table's memory once allocated.
const refusalClosesBytes = refusalCloseSlots * (refusalKeyLen + 1 + stateless.MaxCloseLen)

// refusalCloses is a listener's table of the refusal closes sent last.
// refuseInitial runs on the Transport's read loop and on the goroutines
// of InjectDatagram callers (the integrated offload's agent), so mu
// guards it; it is held for a lookup or a copy, never while sealing.
type refusalCloses struct {
	mu sync.Mutex
	// slots is nil until the first refusal: a listener that never
	// refuses pays nothing.
	slots *[refusalCloseSlots]refusalSlot
	seed  maphash.Seed
	// sealed counts closes built (a key derivation each), resent those
	// copied from the table.
	sealed, resent uint64
}

// makeRefusalKey returns the key of the close answering hdr with code;
// ok is false for connection IDs longer than any version-1 one (Examine
// lets none through; such a close is not remembered).
func makeRefusalKey(hdr *wire.LongHeader, code TransportErrorCode) (k refusalKey, ok bool) {
	dcid, scid := hdr.DestConnID, hdr.SrcConnID
	if len(dcid) > wire.MaxConnIDLen || len(scid) > wire.MaxConnIDLen {
		return k, false
	}
	v, c := uint32(hdr.Version), uint64(code)
	k[0], k[1], k[2], k[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	for i := range 8 {
		k[4+i] = byte(c >> (56 - 8*i))
	}
	const ids = 12
	k[ids] = byte(len(dcid))
	copy(k[ids+1:], dcid)
	k[ids+1+wire.MaxConnIDLen] = byte(len(scid))
	copy(k[ids+2+wire.MaxConnIDLen:], scid)
	return k, true
}

// appendClose appends to b the stateless close with code that answers the
// client Initial in hdr: the one sent before for the same key when the
// table still holds it, else a new one sealed by r and remembered.
func (c *refusalCloses) appendClose(b []byte, r *stateless.Responder, hdr *wire.LongHeader, code TransportErrorCode) ([]byte, error) {
	key, ok := makeRefusalKey(hdr, code)
	if !ok {
		return r.AppendClose(b, hdr, &qerr.TransportError{Code: qerr.TransportErrorCode(code)})
	}
	c.mu.Lock()
	if c.slots == nil {
		c.slots = new([refusalCloseSlots]refusalSlot)
		c.seed = maphash.MakeSeed()
	}
	// The seed is random per listener: an attacker cannot aim its
	// attempts at the slot of another client's.
	i := maphash.Bytes(c.seed, key[:]) % refusalCloseSlots
	if s := &c.slots[i]; s.n != 0 && s.key == key {
		b = append(b, s.close[:s.n]...)
		c.resent++
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()

	start := len(b)
	b, err := r.AppendClose(b, hdr, &qerr.TransportError{Code: qerr.TransportErrorCode(code)})
	if err != nil {
		return b, err
	}
	c.mu.Lock()
	c.sealed++
	if n := len(b) - start; n <= stateless.MaxCloseLen {
		s := &c.slots[i]
		s.key = key
		s.n = uint8(n)
		copy(s.close[:], b[start:])
	}
	c.mu.Unlock()
	return b, nil
}

// counts returns how many closes were sealed and how many resent.
func (c *refusalCloses) counts() (sealed, resent uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sealed, c.resent
}
