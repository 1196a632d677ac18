package fastpath

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxTries bounds the retries that Insert and Lookup make when a rotation
// lands in the middle of them. One retry suffices unless rotations come
// faster than a single lookup runs, which the 30 s window rules out.
const maxTries = 4

// ErrCIDLength is returned when a CID does not have the cache's fixed length.
var ErrCIDLength = errors.New("fastpath: CID length differs from the cache's fixed CID length")

// Cache is the two-table Bloom filter cache. Insert and Lookup are safe for
// concurrent use and take no lock: bits are set with atomic OR and read with
// atomic loads, and the active table is chosen by an atomic generation
// counter (active index = generation & 1). Rotate is serialised by a mutex
// that the hot path never touches.
type Cache struct {
	k0, k1 uint64
	cidLen int
	tables [2][]uint64
	gen    *uint64 // rotation generation; low bit = index of ACTIVE

	rotateMu sync.Mutex
}

// New returns a cache with its own zeroed tables, for CIDs of exactly
// cidLen bytes (1..MaxCIDLen).
func New(key Key, cidLen int) (*Cache, error) {
	return NewShared(key, cidLen, [2][]uint64{make([]uint64, TableWords), make([]uint64, TableWords)}, new(uint64))
}

// NewShared returns a cache over caller-provided memory, such as the
// memory-mapped BPF array maps that the XDP program reads: two tables of
// TableWords words each and the generation word. The memory layout is the
// one documented in docs/fastpath.md. The tables are used as they are (not
// cleared), so a restarted agent keeps the data plane's state. The words must
// be 8-byte aligned and must not be written other than through this package
// or tr_fastpath.h.
func NewShared(key Key, cidLen int, tables [2][]uint64, gen *uint64) (*Cache, error) {
	if cidLen < 1 || cidLen > MaxCIDLen {
		return nil, fmt.Errorf("fastpath: CID length %d outside 1..%d", cidLen, MaxCIDLen)
	}
	for i, t := range tables {
		if len(t) != TableWords {
			return nil, fmt.Errorf("fastpath: table %d has %d words, want %d", i, len(t), TableWords)
		}
	}
	if gen == nil {
		return nil, errors.New("fastpath: nil generation word")
	}
	k0, k1 := key.words()
	return &Cache{k0: k0, k1: k1, cidLen: cidLen, tables: tables, gen: gen}, nil
}

// CIDLen returns the fixed CID length the cache was built for.
func (c *Cache) CIDLen() int { return c.cidLen }

// Hash returns the SipHash-2-4 of cid under the cache's key.
func (c *Cache) Hash(cid []byte) uint64 { return SipHash24(c.k0, c.k1, cid) }

// Insert records cid in the ACTIVE table. It returns ErrCIDLength, and
// records nothing, when len(cid) is not the cache's CID length.
func (c *Cache) Insert(cid []byte) error {
	if len(cid) != c.cidLen {
		return ErrCIDLength
	}
	c.insertIndices(Indices(c.Hash(cid)))
	return nil
}

// Lookup reports whether cid is in either table; a hit in the PASSIVE table
// re-inserts cid into the ACTIVE one, so that traffic keeps a connection
// alive across rotations. A CID of the wrong length is a miss.
func (c *Cache) Lookup(cid []byte) bool {
	if len(cid) != c.cidLen {
		return false
	}
	idx := Indices(c.Hash(cid))
	for range maxTries {
		g := atomic.LoadUint64(c.gen)
		if testBits(c.tables[g&1], &idx) {
			return true
		}
		if testBits(c.tables[(g&1)^1], &idx) {
			c.insertIndices(idx)
			return true
		}
		// A miss counts only if no rotation happened meanwhile: then the
		// table read as ACTIVE was never being cleared during the reads.
		if atomic.LoadUint64(c.gen) == g {
			return false
		}
	}
	return false
}

// Contains is Lookup under the name the offload agent's CIDLookup
// interface uses: the agent asks it for a retried Initial whose DCID is the
// host's SCID, which was admitted from the host's egress. Like Lookup it
// refreshes an entry found in the PASSIVE table.
func (c *Cache) Contains(cid []byte) bool { return c.Lookup(cid) }

// insertIndices sets the bits in the ACTIVE table and makes sure that table
// was still ACTIVE after the bits were set; if a rotation intervened, the
// bits may have gone to a table now being cleared, so they are set again
// in the new ACTIVE table.
func (c *Cache) insertIndices(idx [K]uint32) {
	for range maxTries {
		g := atomic.LoadUint64(c.gen)
		setBits(c.tables[g&1], &idx)
		if atomic.LoadUint64(c.gen) == g {
			return
		}
	}
}

// Rotate ends a window: it clears the PASSIVE table, then makes it the
// ACTIVE one (the old ACTIVE becomes PASSIVE). Entries neither inserted nor
// looked up during the ending window are gone afterwards.
func (c *Cache) Rotate() {
	c.rotateMu.Lock()
	defer c.rotateMu.Unlock()
	g := atomic.LoadUint64(c.gen)
	passive := c.tables[(g&1)^1]
	for i := range passive {
		atomic.StoreUint64(&passive[i], 0)
	}
	atomic.StoreUint64(c.gen, g+1)
}

// Generation returns the number of rotations so far (for a shared cache,
// the value of the shared generation word).
func (c *Cache) Generation() uint64 { return atomic.LoadUint64(c.gen) }

// ActiveIndex returns which table (0 or 1) is ACTIVE.
func (c *Cache) ActiveIndex() int { return int(atomic.LoadUint64(c.gen) & 1) }

func testBits(t []uint64, idx *[K]uint32) bool {
	for _, i := range idx {
		if atomic.LoadUint64(&t[i>>6])&(1<<(i&63)) == 0 {
			return false
		}
	}
	return true
}

func setBits(t []uint64, idx *[K]uint32) {
	for _, i := range idx {
		w, bit := &t[i>>6], uint64(1)<<(i&63)
		// Skip the locked OR when the bit is already set: re-inserts of
		// live connections then only read the shared cache line.
		if atomic.LoadUint64(w)&bit == 0 {
			atomic.OrUint64(w, bit)
		}
	}
}
