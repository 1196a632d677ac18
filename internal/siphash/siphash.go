// Package siphash is SipHash-2-4 with the 64-bit output (Aumasson and
// Bernstein), the keyed hash the fast path shares between Go, eBPF and the
// DPA: the Bloom cache's bit indices (offload/fastpath) and the MAC of
// authenticated connection IDs (quiclb). The C twin is
// dpa-firmware/include/tr_fastpath.h.
package siphash

import (
	"encoding/binary"
	"math/bits"
)

// KeyWords returns the two 64-bit key words of a 16-byte key: bytes 0..7
// and 8..15, each read little-endian, as in the reference implementation.
func KeyWords(key *[16]byte) (k0, k1 uint64) {
	return binary.LittleEndian.Uint64(key[0:8]), binary.LittleEndian.Uint64(key[8:16])
}

// round is one SipRound; small enough that the compiler inlines it.
func round(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13)
	v1 ^= v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16)
	v3 ^= v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21)
	v3 ^= v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17)
	v1 ^= v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}

// Sum64 returns SipHash-2-4 of msg under the key (k0, k1). It does not
// allocate.
func Sum64(k0, k1 uint64, msg []byte) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	last := uint64(len(msg)) << 56
	for len(msg) >= 8 {
		m := binary.LittleEndian.Uint64(msg)
		v3 ^= m
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
		v0 ^= m
		msg = msg[8:]
	}
	// The final block holds the 0..7 remaining bytes, little-endian, and
	// the message length modulo 256 in its top byte.
	for i := len(msg) - 1; i >= 0; i-- {
		last |= uint64(msg[i]) << (8 * uint(i))
	}
	v3 ^= last
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= last
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	return v0 ^ v1 ^ v2 ^ v3
}
