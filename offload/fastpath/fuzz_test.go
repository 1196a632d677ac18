package fastpath

import (
	"encoding/binary"
	"testing"
)

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
