package token

import (
	"errors"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// Replay filter parameters (docs/token.md, "Replay filter").
const (
	// DefaultReplayCapacity is how many tokens a generation of a
	// ReplayFilter holds before it rotates early.
	DefaultReplayCapacity = 1 << 18
	// DefaultRetransmitWindow is how long a token's first Initial may be
	// seen again (a client's retransmission, an agent's forwarded copy):
	// the order of a handshake timeout.
	DefaultRetransmitWindow = 10 * time.Second
	// replayShards spreads tokens over independently locked filters.
	replayShards = 16
	// replayBitsPerKey sizes each Bloom filter: 16 bits per token.
	replayBitsPerKey = 16
	// replayHashes is k, the bits set per key: near the optimum for 16
	// bits per key, for a false-positive rate of 0.07 % per generation at
	// capacity.
	replayHashes = 7
)

// ReplayFilterConfig sizes a ReplayFilter; zero fields take the defaults.
type ReplayFilterConfig struct {
	// Window is how long a token is remembered at least, as long as the
	// filter is not over capacity: the new_token lifetime plus the allowed
	// clock skew. Zero means DefaultNewTokenMaxAge + DefaultMaxFuture.
	Window time.Duration
	// RetransmitWindow is how long the same token with the same DCID
	// counts as the same Initial (at least, and at most twice that); zero
	// means DefaultRetransmitWindow. It must not exceed Window.
	RetransmitWindow time.Duration
	// Capacity is the number of tokens a generation holds; a generation
	// that fills up rotates before its window ends, so the false-positive
	// rate stays at its design value and memory stays fixed. Zero means
	// DefaultReplayCapacity. Memory is 8 bytes per token of capacity (two
	// filters of two generations of 16 bits per token), allocated per
	// shard on first use.
	Capacity int
}

// ReplayFilter makes NEW_TOKEN tokens single-use within their lifetime
// (RFC 9000 section 8.1.4: a server SHOULD NOT accept one twice). Each of
// its shards holds two pairs of rotating Bloom filters, like the fast-path
// cache: one keyed by a token's identity (its 21-byte header: TID, T and R
// are unique per token), remembered for the token's lifetime, and one
// keyed by identity and the Initial's DCID, remembered for the
// retransmission window. A token is a replay when its identity was seen
// before, unless with this DCID within the retransmission window: a
// client retransmitting its first Initial (same DCID, same token) passes,
// and so does the agent's forwarded Initial when the host checks it
// again; the same datagram replayed later does not. A client's later
// Initials, whose DCID is the server's connection ID, must not be
// checked: they belong to a connection that exists.
//
// Errors are harmless either way: a false positive on the identity makes a
// fresh token look replayed (its client gets a Retry: one more round trip),
// one on identity and DCID lets a replay through (it is then treated as a
// first use). Neither can make a benign client fail.
//
// It is safe for concurrent use; each shard has its own lock.
type ReplayFilter struct {
	seed   maphash.Seed
	shards [replayShards]replayShard
}

type replayShard struct {
	mu    sync.Mutex
	ids   rotatingBloom // token identities, for the token lifetime
	uses  rotatingBloom // identity and DCID, for the retransmission window
	stats ReplayStats
}

// rotatingBloom is two generations of a Bloom filter: insertions go to
// the current one, lookups see both, and a rotation clears the older one
// and makes it current. A key is thus remembered for at least one window
// (or until a generation fills up), at most two.
type rotatingBloom struct {
	gens     [2][]uint64 // nil until first use
	cur      int
	count    int   // keys in gens[cur]
	capacity int   // keys per generation
	started  int64 // when gens[cur] began, Unix nanoseconds
	windowNs int64
	mask     uint64 // bits - 1
}

// ReplayStats counts what a ReplayFilter saw.
type ReplayStats struct {
	// FirstUses counts tokens recorded, Retransmissions tokens seen again
	// with the same DCID within the retransmission window, Replays tokens
	// refused.
	FirstUses, Retransmissions, Replays uint64
	// Rotations counts generation changes; EarlyRotations those forced by
	// a full generation before its window ended (then tokens are
	// remembered for less than the window: raise Capacity).
	Rotations, EarlyRotations uint64
	// MemoryBytes is the memory the filter's bit arrays use now.
	MemoryBytes uint64
}

// ErrReplayed is returned by ReplayFilter.Use for a token already used;
// its Reason is ReasonReplayed.
var ErrReplayed = rejectErrs[ReasonReplayed]

// NewReplayFilter returns a filter sized by cfg.
func NewReplayFilter(cfg ReplayFilterConfig) (*ReplayFilter, error) {
	if cfg.Window < 0 || cfg.RetransmitWindow < 0 || cfg.Capacity < 0 {
		return nil, errors.New("token: negative ReplayFilterConfig field")
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultNewTokenMaxAge + DefaultMaxFuture
	}
	if cfg.RetransmitWindow == 0 {
		cfg.RetransmitWindow = min(DefaultRetransmitWindow, cfg.Window)
	}
	if cfg.RetransmitWindow > cfg.Window {
		return nil, errors.New("token: ReplayFilterConfig.RetransmitWindow longer than Window")
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultReplayCapacity
	}
	perShard := max((cfg.Capacity+replayShards-1)/replayShards, 1)
	// A power of two of at least perShard*replayBitsPerKey bits, and at
	// least one word.
	nbits := uint64(1) << max(bits.Len64(uint64(perShard*replayBitsPerKey-1)), 6)
	f := &ReplayFilter{seed: maphash.MakeSeed()}
	for i := range f.shards {
		s := &f.shards[i]
		s.ids = rotatingBloom{capacity: perShard, windowNs: cfg.Window.Nanoseconds(), mask: nbits - 1}
		s.uses = rotatingBloom{capacity: perShard, windowNs: cfg.RetransmitWindow.Nanoseconds(), mask: nbits - 1}
	}
	return f, nil
}

// Use records that tok, a token that validated, was presented in a client
// Initial whose destination connection ID is dcid, at time now. It returns
// nil for a first use and for a retransmission (the same token with the
// same DCID within the retransmission window), and ErrReplayed otherwise.
// Only validated tokens may be passed: anyone can make up headers, and
// each use takes room in the filter. Tokens shorter than HeaderLen return
// ErrMalformed.
func (f *ReplayFilter) Use(tok, dcid []byte, now time.Time) error {
	if len(tok) < HeaderLen {
		return ErrMalformed
	}
	var key [HeaderLen + 1 + 255]byte
	n := copy(key[:], tok[:HeaderLen])
	hID := maphash.Bytes(f.seed, key[:n])
	key[n] = byte(len(dcid))
	n++
	n += copy(key[n:], dcid)
	hUse := maphash.Bytes(f.seed, key[:n])

	s := &f.shards[hID>>60] // the top bits; the bit indices use the rest
	s.mu.Lock()
	defer s.mu.Unlock()
	nowNs := now.UnixNano()
	s.ids.maybeRotate(nowNs, &s.stats)
	s.uses.maybeRotate(nowNs, &s.stats)
	if s.uses.has(hUse) {
		s.stats.Retransmissions++
		return nil
	}
	if s.ids.has(hID) {
		s.stats.Replays++
		return ErrReplayed
	}
	s.ids.add(hID)
	s.uses.add(hUse)
	s.stats.FirstUses++
	return nil
}

// Stats returns the filter's counters.
func (f *ReplayFilter) Stats() ReplayStats {
	var st ReplayStats
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		st.FirstUses += s.stats.FirstUses
		st.Retransmissions += s.stats.Retransmissions
		st.Replays += s.stats.Replays
		st.Rotations += s.stats.Rotations
		st.EarlyRotations += s.stats.EarlyRotations
		for _, b := range []*rotatingBloom{&s.ids, &s.uses} {
			for _, g := range b.gens {
				st.MemoryBytes += uint64(len(g)) * 8
			}
		}
		s.mu.Unlock()
	}
	return st
}

// maybeRotate starts a new generation when the current one is full or its
// window has passed; after two windows nothing is left to remember. It
// allocates the generations on first use.
func (b *rotatingBloom) maybeRotate(nowNs int64, st *ReplayStats) {
	if b.gens[0] == nil {
		words := (b.mask + 1) / 64
		b.gens = [2][]uint64{make([]uint64, words), make([]uint64, words)}
		b.started = nowNs
		return
	}
	age := nowNs - b.started
	switch {
	case age >= 2*b.windowNs:
		clear(b.gens[b.cur]) // rotate clears the other
		b.rotate(nowNs)
	case age >= b.windowNs:
		b.rotate(nowNs)
	case b.count >= b.capacity:
		b.rotate(nowNs)
		st.EarlyRotations++
	default:
		return
	}
	st.Rotations++
}

// rotate clears the older generation and makes it the current one.
func (b *rotatingBloom) rotate(nowNs int64) {
	b.cur ^= 1
	clear(b.gens[b.cur])
	b.count, b.started = 0, nowNs
}

// index is the word and bit of a key's i-th position (double hashing).
func (b *rotatingBloom) index(h uint64, i int) (word uint64, bit uint64) {
	lo, hi := h&0xffffffff, h>>32|1
	n := (lo + uint64(i)*hi) & b.mask
	return n >> 6, 1 << (n & 63)
}

// has reports whether either generation holds the key.
func (b *rotatingBloom) has(h uint64) bool {
	for _, g := range b.gens {
		hit := true
		for i := range replayHashes {
			w, bit := b.index(h, i)
			if g[w]&bit == 0 {
				hit = false
				break
			}
		}
		if hit {
			return true
		}
	}
	return false
}

// add inserts the key into the current generation.
func (b *rotatingBloom) add(h uint64) {
	g := b.gens[b.cur]
	for i := range replayHashes {
		w, bit := b.index(h, i)
		g[w] |= bit
	}
	b.count++
}
