package fastpath

import (
	"encoding/binary"
	"testing"
)

// sipHashBytewise is an independent, deliberately naive SipHash-2-4 that
// builds every message word byte by byte, to cross-check SipHash24 on
// arbitrary input lengths and keys.
func sipHashBytewise(k0, k1 uint64, msg []byte) uint64 {
	v := [4]uint64{k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573}
	rounds := func(n int) {
		for range n {
			v[0], v[1], v[2], v[3] = sipRound(v[0], v[1], v[2], v[3])
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

// FuzzSipHash24 checks SipHash24 against the bytewise version for any key
// and message.
func FuzzSipHash24(f *testing.F) {
	f.Add(make([]byte, 16), []byte{})
	f.Add([]byte("0123456789abcdef"), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte("fedcba9876543210"), []byte("a connection id of 20"))
	f.Fuzz(func(t *testing.T, key, msg []byte) {
		var k Key
		copy(k[:], key)
		k0, k1 := k.words()
		if got, want := SipHash24(k0, k1, msg), sipHashBytewise(k0, k1, msg); got != want {
			t.Fatalf("SipHash24(%x, %x) = %#x, bytewise %#x", k, msg, got, want)
		}
	})
}

// FuzzCacheInsertLookup inserts arbitrary byte strings as CIDs: a CID of
// the cache's length must always be found afterwards, and any other length
// must be rejected without touching the tables.
func FuzzCacheInsertLookup(f *testing.F) {
	c, err := New(refKey(), DefaultCIDLen)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(0))
	f.Add([]byte{}, uint8(1))
	f.Add([]byte("twenty-byte-cid-here"), uint8(2))
	f.Fuzz(func(t *testing.T, cid []byte, rotations uint8) {
		err := c.Insert(cid)
		if len(cid) != DefaultCIDLen {
			if err == nil {
				t.Fatalf("Insert accepted a %d-byte CID", len(cid))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		// Up to one rotation after an insert the CID must still hit.
		if rotations%2 == 1 {
			c.Rotate()
		}
		if !c.Lookup(cid) {
			t.Fatalf("CID %x missing (generation %d)", cid, c.Generation())
		}
		if binary.LittleEndian.Uint64(cid)%64 == 0 {
			c.Rotate()
		}
	})
}
