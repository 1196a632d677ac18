package connid

import (
	"crypto/sha256"

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
