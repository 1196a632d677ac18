package token

import (
	"encoding/binary"
	"testing"
)

func TestKeyCacheBounded(t *testing.T) {
	c := NewKeyCache(100)
	if c.Cap() < 100 || c.Cap() > 256 {
		t.Fatalf("Cap = %d for 100", c.Cap())
	}
	var k tokenKeys
	for i := range 10000 {
		var tid [TIDLen]byte
		binary.BigEndian.PutUint64(tid[:], uint64(i)*0x9e3779b97f4a7c15)
		c.put(7, &tid, k)
		if _, ok := c.get(7, &tid); !ok {
			t.Fatalf("entry %d missing right after put", i)
		}
	}
	if n := c.len(); n > c.Cap() || n < c.Cap()/2 {
		t.Fatalf("%d entries in a cache of %d", n, c.Cap())
	}
	if NewKeyCache(0).Cap() != DefaultCacheEntries {
		t.Fatalf("default Cap = %d", NewKeyCache(0).Cap())
	}
}

func TestKeyCacheKeyIncludesEpoch(t *testing.T) {
	c := NewKeyCache(64)
	tid := [TIDLen]byte{1, 2, 3, 4, 5, 6, 7, 8}
	c.put(1, &tid, tokenKeys{nBase: [12]byte{1}})
	if _, ok := c.get(17, &tid); ok {
		t.Fatal("entry of epoch 1 returned for epoch 17 (same key id)")
	}
	if k, ok := c.get(1, &tid); !ok || k.nBase[0] != 1 {
		t.Fatal("entry lost")
	}
}

// In a full set, CLOCK evicts an entry that was not used since insertion
// and keeps one that was.
func TestKeyCacheClock(t *testing.T) {
	c := NewKeyCache(1) // one set per shard
	tids := make([][TIDLen]byte, 5)
	for i := range tids {
		// TM values 16 apart land in the same shard and set.
		binary.BigEndian.PutUint32(tids[i][4:], uint32(i*cacheShards))
		tids[i][0] = byte(i)
	}
	const epoch = 0
	c.put(epoch, &tids[0], tokenKeys{})
	if _, ok := c.get(epoch, &tids[0]); !ok {
		t.Fatal("A missing")
	}
	for i := 1; i < 5; i++ {
		c.put(epoch, &tids[i], tokenKeys{})
	}
	if _, ok := c.get(epoch, &tids[0]); !ok {
		t.Error("recently used entry evicted")
	}
	if _, ok := c.get(epoch, &tids[1]); ok {
		t.Error("unused entry kept instead")
	}
	if _, ok := c.get(epoch, &tids[4]); !ok {
		t.Error("new entry not stored")
	}
}
