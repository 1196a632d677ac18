package siphash

import "testing"

// vectors are the first 16 SipHash-2-4 (64-bit output) reference vectors
// of the reference implementation (vectors_sip64): key 00..0f, message i
// = the bytes 00, 01, ..., i-1. offload/fastpath checks all 64 through its
// wrapper, and dpa-firmware's C test checks them in C.
var vectors = [16]uint64{
	0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
	0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137,
	0x93f5f5799a932462, 0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
	0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee, 0xa129ca6149be45e5,
}

func TestReferenceVectors(t *testing.T) {
	var key [16]byte
	msg := make([]byte, len(vectors))
	for i := range key {
		key[i] = byte(i)
	}
	for i := range msg {
		msg[i] = byte(i)
	}
	k0, k1 := KeyWords(&key)
	for n, want := range vectors {
		if got := Sum64(k0, k1, msg[:n]); got != want {
			t.Errorf("len %d: Sum64 = %#016x, want %#016x", n, got, want)
		}
	}
}

func TestSum64DoesNotAllocate(t *testing.T) {
	cid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	var sink uint64
	if n := testing.AllocsPerRun(100, func() { sink ^= Sum64(1, 2, cid) }); n != 0 {
		t.Errorf("Sum64 allocates %v times", n)
	}
	_ = sink
}

// bytewise is an independent, deliberately naive SipHash-2-4 that builds
// every message word byte by byte, to cross-check Sum64 on arbitrary input
// lengths and keys.
func bytewise(k0, k1 uint64, msg []byte) uint64 {
	v := [4]uint64{k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573}
	rounds := func(n int) {
		for range n {
			v[0], v[1], v[2], v[3] = round(v[0], v[1], v[2], v[3])
		}
	}
	padded := append(append([]byte(nil), msg...), make([]byte, 7-len(msg)%8)...)
	padded = append(padded, byte(len(msg)))
	for off := 0; off < len(padded); off += 8 {
		var m uint64
		for j := 7; j >= 0; j-- {
			m = m<<8 | uint64(padded[off+j])
		}
		v[3] ^= m
		rounds(2)
		v[0] ^= m
	}
	v[2] ^= 0xff
	rounds(4)
	return v[0] ^ v[1] ^ v[2] ^ v[3]
}

// FuzzSipHash24 checks Sum64 against the bytewise version for any key and
// message.
func FuzzSipHash24(f *testing.F) {
	f.Add(make([]byte, 16), []byte{})
	f.Add([]byte("0123456789abcdef"), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte("fedcba9876543210"), []byte("a connection id of 20"))
	f.Fuzz(func(t *testing.T, key, msg []byte) {
		var k [16]byte
		copy(k[:], key)
		k0, k1 := KeyWords(&k)
		if got, want := Sum64(k0, k1, msg), bytewise(k0, k1, msg); got != want {
			t.Fatalf("Sum64(%x, %x) = %#x, bytewise %#x", k, msg, got, want)
		}
	})
}
