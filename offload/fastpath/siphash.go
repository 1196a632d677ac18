package fastpath

import "github.com/turboretry/turboretry/internal/siphash"

// Key is the 128-bit SipHash key. Its first 8 bytes, read little-endian,
// are k0 and its last 8 bytes are k1, as in the SipHash reference code.
type Key [16]byte

func (k *Key) words() (k0, k1 uint64) { return siphash.KeyWords((*[16]byte)(k)) }

// SipHash24 returns SipHash-2-4 of msg under the key (k0, k1), with the
// 64-bit output. It does not allocate.
func SipHash24(k0, k1 uint64, msg []byte) uint64 { return siphash.Sum64(k0, k1, msg) }
