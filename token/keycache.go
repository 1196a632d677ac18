package token

import (
	"encoding/binary"
	"sync"
)

// DefaultCacheEntries is the capacity of a KeyCache made with size 0.
const DefaultCacheEntries = 4096

const (
	cacheWays   = 4  // entries per set
	cacheShards = 16 // independent locks
)

// KeyCache caches derived per-TID keys by (epoch, TID). It is a fixed-size,
// sharded, set-associative cache with CLOCK replacement inside each set, so
// its memory stays bounded however many distinct valid-looking TIDs arrive,
// and validators sharing it contend only on one of several shard locks.
// It is safe for concurrent use.
type KeyCache struct {
	shards  [cacheShards]cacheShard
	setMask uint32
}

type cacheShard struct {
	mu   sync.Mutex
	sets []cacheSet
	_    [32]byte // pad to 64 bytes: neighbouring shard locks on separate cache lines
}

type cacheSet struct {
	e    [cacheWays]cacheEntry
	hand uint8
}

type cacheEntry struct {
	used  bool
	ref   bool // CLOCK reference bit
	epoch uint64
	tid   [TIDLen]byte
	keys  tokenKeys
}

// NewKeyCache returns a cache of about entries derived keys (rounded up to
// a power of two, at least cacheShards*cacheWays); 0 means
// DefaultCacheEntries.
func NewKeyCache(entries int) *KeyCache {
	if entries <= 0 {
		entries = DefaultCacheEntries
	}
	sets := 1
	for sets*cacheShards*cacheWays < entries && sets < 1<<24 {
		sets <<= 1
	}
	c := &KeyCache{setMask: uint32(sets - 1)}
	for i := range c.shards {
		c.shards[i].sets = make([]cacheSet, sets)
	}
	return c
}

// Cap returns the number of entries the cache holds at most.
func (c *KeyCache) Cap() int { return cacheShards * len(c.shards[0].sets) * cacheWays }

// slot picks shard and set. TM is an HMAC output the sender cannot steer
// without the key (the TM check runs first), so it spreads entries evenly.
func (c *KeyCache) slot(epoch uint64, tid *[TIDLen]byte) (*cacheShard, *cacheSet) {
	h := binary.BigEndian.Uint32(tid[4:8]) ^ uint32(epoch)*0x9e3779b9
	sh := &c.shards[h%cacheShards]
	return sh, &sh.sets[(h/cacheShards)&c.setMask]
}

// get returns the keys for (epoch, tid).
func (c *KeyCache) get(epoch uint64, tid *[TIDLen]byte) (tokenKeys, bool) {
	sh, set := c.slot(epoch, tid)
	sh.mu.Lock()
	for i := range set.e {
		en := &set.e[i]
		if en.used && en.epoch == epoch && en.tid == *tid {
			en.ref = true
			k := en.keys
			sh.mu.Unlock()
			return k, true
		}
	}
	sh.mu.Unlock()
	return tokenKeys{}, false
}

// put stores keys for (epoch, tid), evicting by CLOCK within the set.
func (c *KeyCache) put(epoch uint64, tid *[TIDLen]byte, k tokenKeys) {
	sh, set := c.slot(epoch, tid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range set.e {
		en := &set.e[i]
		if en.used && en.epoch == epoch && en.tid == *tid {
			return // another validator got here first
		}
	}
	for {
		en := &set.e[set.hand]
		set.hand = (set.hand + 1) % cacheWays
		if en.used && en.ref {
			en.ref = false
			continue
		}
		*en = cacheEntry{used: true, epoch: epoch, tid: *tid, keys: k}
		return
	}
}

// len counts the entries in use (tests).
func (c *KeyCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for j := range sh.sets {
			for _, en := range sh.sets[j].e {
				if en.used {
					n++
				}
			}
		}
		sh.mu.Unlock()
	}
	return n
}
