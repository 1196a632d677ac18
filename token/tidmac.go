package token

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding"
	"errors"
	"hash"
)

var errNoMarshal = errors.New("token: SHA-256 state cannot be saved or restored")

// hmacStates precomputes HMAC-SHA256 for a key of at most one block: the
// hash states after absorbing key^ipad and key^opad (RFC 2104).
func hmacStates(key []byte) (inner, outer []byte, err error) {
	var pad [sha256.BlockSize]byte
	copy(pad[:], key)
	state := func(x byte) ([]byte, error) {
		var b [sha256.BlockSize]byte
		for i := range b {
			b[i] = pad[i] ^ x
		}
		h := sha256.New()
		h.Write(b[:])
		m, ok := h.(encoding.BinaryMarshaler)
		if !ok {
			return nil, errNoMarshal
		}
		return m.MarshalBinary()
	}
	if inner, err = state(0x36); err != nil {
		return nil, nil, err
	}
	if outer, err = state(0x5c); err != nil {
		return nil, nil, err
	}
	return inner, outer, nil
}

// tidMAC computes TM = HMAC-SHA256(K_tid, TR)[0:4] from the precomputed
// states without allocating. It holds scratch state: one per goroutine.
type tidMAC struct {
	h   hash.Hash
	u   encoding.BinaryUnmarshaler
	sum [sha256.Size]byte
}

func newTIDMAC() (*tidMAC, error) {
	h := sha256.New()
	u, ok := h.(encoding.BinaryUnmarshaler)
	if !ok {
		return nil, errNoMarshal
	}
	return &tidMAC{h: h, u: u}, nil
}

// compute returns TM for tr (4 bytes).
func (m *tidMAC) compute(ek *epochKeys, tr []byte) (tm [4]byte) {
	// The states were produced by the same hash implementation, so
	// restoring them cannot fail.
	_ = m.u.UnmarshalBinary(ek.tidInner)
	m.h.Write(tr)
	in := m.h.Sum(m.sum[:0])
	_ = m.u.UnmarshalBinary(ek.tidOuter)
	m.h.Write(in)
	out := m.h.Sum(m.sum[:0])
	copy(tm[:], out)
	return tm
}

// check reports whether tid = TR || TM carries the right TM, in constant
// time.
func (m *tidMAC) check(ek *epochKeys, tid []byte) bool {
	tm := m.compute(ek, tid[:4])
	return subtle.ConstantTimeCompare(tm[:], tid[4:8]) == 1
}
