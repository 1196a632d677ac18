package tlskdf

import (
	"crypto/sha256"
	"encoding"
	"errors"
)

// These helpers exist so that key derivation does not allocate:
// crypto/hmac keeps its state behind hash.Hash interfaces on the heap
// (five allocations per key, more per Sum). Here sha256.New is called in
// the function that uses the digest, so the compiler devirtualizes it and
// keeps it on the stack with the pads; TestNoAllocs holds that in place.

const (
	ipad = 0x36
	opad = 0x5c
	// hashStateCap bounds a marshaled SHA-256 state (108 bytes in Go 1.26:
	// magic, chaining value, partial block, length).
	hashStateCap = 128
)

var errHashState = errors.New("tlskdf: SHA-256 state cannot be saved")

// innerPad returns the HMAC key (RFC 2104) XOR ipad, a key longer than
// the block hashed first.
func innerPad(key []byte) [sha256.BlockSize]byte {
	var pad [sha256.BlockSize]byte
	if len(key) > len(pad) {
		k := sha256.Sum256(key)
		copy(pad[:], k[:])
	} else {
		copy(pad[:], key)
	}
	for i := range pad {
		pad[i] ^= ipad
	}
	return pad
}

// hmacSHA256 returns HMAC-SHA256(key, msg[0] || msg[1] || ...).
func hmacSHA256(key []byte, msg ...[]byte) [sha256.Size]byte {
	pad := innerPad(key)
	h := sha256.New()
	h.Write(pad[:])
	for _, m := range msg {
		h.Write(m)
	}
	var inner, out [sha256.Size]byte
	h.Sum(inner[:0])
	for i := range pad {
		pad[i] ^= ipad ^ opad
	}
	h.Reset()
	h.Write(pad[:])
	h.Write(inner[:])
	h.Sum(out[:0])
	return out
}

// hmacKeySHA256 is an HMAC-SHA256 key with the inner and outer hash
// states after the padded key saved, as crypto/hmac does: every MAC under
// the key then hashes two blocks instead of four.
type hmacKeySHA256 struct {
	inner, outer [hashStateCap]byte
	n            int // marshaled state length; 0 before init
}

func (k *hmacKeySHA256) init(key []byte) error {
	pad := innerPad(key)
	h := sha256.New()
	a, ok := h.(encoding.BinaryAppender)
	if !ok {
		return errHashState
	}
	h.Write(pad[:])
	inner, err := a.AppendBinary(k.inner[:0])
	if err != nil {
		return err
	}
	for i := range pad {
		pad[i] ^= ipad ^ opad
	}
	h.Reset()
	h.Write(pad[:])
	outer, err := a.AppendBinary(k.outer[:0])
	if err != nil {
		return err
	}
	// A state that outgrew the arrays was appended elsewhere.
	if len(inner) > hashStateCap || len(outer) != len(inner) {
		return errHashState
	}
	k.n = len(inner)
	return nil
}

// sum returns HMAC-SHA256(key, msg[0] || msg[1] || ...).
func (k *hmacKeySHA256) sum(msg ...[]byte) ([sha256.Size]byte, error) {
	var inner, out [sha256.Size]byte
	h := sha256.New()
	u, ok := h.(encoding.BinaryUnmarshaler)
	if !ok || k.n == 0 {
		return out, errHashState
	}
	if err := u.UnmarshalBinary(k.inner[:k.n]); err != nil {
		return out, err
	}
	for _, m := range msg {
		h.Write(m)
	}
	h.Sum(inner[:0])
	if err := u.UnmarshalBinary(k.outer[:k.n]); err != nil {
		return out, err
	}
	h.Write(inner[:])
	h.Sum(out[:0])
	return out, nil
}
