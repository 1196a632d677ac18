package connid

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"

	"github.com/turboretry/turboretry/internal/protocol"
)

// TokenLen is the length of a stateless reset token.
const TokenLen = 16

// HMAC-SHA256 parameters (RFC 2104): block size and pad bytes.
const (
	hmacBlock = 64
	ipadByte  = 0x36
	opadByte  = 0x5c
)

// ResetTokenFor returns the stateless reset token of cid under key:
// HMAC-SHA256(key, cid) truncated to 16 bytes, the keyed hash RFC 9000
// section 10.3.2 suggests. Any instance that knows the key can recompute
// it from a packet's DCID after losing state. It does not allocate: HMAC
// is computed over stack buffers with sha256.Sum256.
func ResetTokenFor(key [32]byte, cid protocol.ConnectionID) [TokenLen]byte {
	// inner = H((K xor ipad) || cid); the 32-byte key is zero padded to
	// one block.
	var in [hmacBlock + protocol.MaxConnectionIDLen]byte
	for i := range hmacBlock {
		k := byte(0)
		if i < len(key) {
			k = key[i]
		}
		in[i] = k ^ ipadByte
	}
	n := len(cid.AppendTo(in[hmacBlock:hmacBlock]))
	inner := sha256.Sum256(in[:hmacBlock+n])

	// outer = H((K xor opad) || inner)
	var out [hmacBlock + sha256.Size]byte
	for i := range hmacBlock {
		k := byte(0)
		if i < len(key) {
			k = key[i]
		}
		out[i] = k ^ opadByte
	}
	copy(out[hmacBlock:], inner[:])
	sum := sha256.Sum256(out[:])

	var t [TokenLen]byte
	copy(t[:], sum[:TokenLen])
	return t
}

// ResetHasher computes the same tokens as ResetTokenFor with a keyed HMAC
// state that is set up once, which halves the SHA-256 blocks per token. It
// is not safe for concurrent use: keep one per goroutine (for example in
// the Transport's receive loop). Token does not allocate.
type ResetHasher struct {
	mac hash.Hash
	in  [protocol.MaxConnectionIDLen]byte
	sum [sha256.Size]byte
}

// NewResetHasher returns a ResetHasher for key.
func NewResetHasher(key [32]byte) *ResetHasher {
	return &ResetHasher{mac: hmac.New(sha256.New, key[:])}
}

// Token returns the stateless reset token of cid.
func (h *ResetHasher) Token(cid protocol.ConnectionID) [TokenLen]byte {
	// Copy into h.in so cid itself does not escape through the
	// hash.Hash interface.
	n := len(cid.AppendTo(h.in[:0]))
	h.mac.Reset()
	h.mac.Write(h.in[:n])
	s := h.mac.Sum(h.sum[:0])
	var t [TokenLen]byte
	copy(t[:], s[:TokenLen])
	return t
}
