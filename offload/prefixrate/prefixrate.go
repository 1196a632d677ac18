// Package prefixrate is the fast path's rate limit by source prefix
// (issue 27): a token bucket per IPv4 /24 or IPv6 /56 (configurable) for the
// connection attempts (validated first Initials, each attempt charged
// once) that the Retry agent forwards to the host, so that a prefix of
// real addresses opening connections faster than its rate is answered
// (CONNECTION_REFUSED, or dropped) before the host works.
//
// The bucket is kept as a GCRA theoretical arrival time (TAT), one number
// per prefix: a bucket of Burst tokens refilled by one every Interval is
// empty exactly when TAT > now + (Burst-1)*Interval, and taking a token
// moves TAT to max(TAT, now) + Interval. The XDP program (offload/xdp)
// reads the same number from an LRU hash map with its own clock; the
// agent, which alone can tell a valid token from a forged one, is the only
// one that takes tokens, so spoofed Initials from a prefix cannot empty
// its bucket. [Limiter] is the agent's table; its OnEmpty hook hands a
// prefix's TAT to the XDP program when its bucket runs empty.
package prefixrate

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Defaults for Config.
const (
	DefaultPrefixLen4  = 24
	DefaultPrefixLen6  = 56
	DefaultMaxPrefixes = 65536
	DefaultMaxAttempts = 4096
)

// Action is what happens to a validated Initial over its prefix's rate.
type Action uint8

const (
	// Refuse answers it with a stateless CONNECTION_REFUSED close, which
	// the agent builds (the XDP program cannot encrypt).
	Refuse Action = iota
	// Drop discards it; the XDP program drops it by itself.
	Drop
)

// String returns the action's flag value.
func (a Action) String() string {
	switch a {
	case Refuse:
		return "refuse"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// ParseAction parses "refuse" or "drop".
func ParseAction(s string) (Action, error) {
	switch s {
	case "refuse":
		return Refuse, nil
	case "drop":
		return Drop, nil
	}
	return Refuse, fmt.Errorf("prefixrate: unknown action %q (want refuse or drop)", s)
}

// Config configures the limit. The zero Config is off.
type Config struct {
	// Rate is the number of connection attempts (validated first
	// Initials) a prefix may start per second; 0 turns the limit off. An
	// attempt is charged once: the other datagrams of its ClientHello, and
	// its retransmissions, carry the same DCID and take nothing
	// (Limiter.AllowAttempt).
	Rate float64
	// Burst is the bucket's size; 0 means max(1, ceil(2*Rate)).
	Burst int
	// PrefixLen4 and PrefixLen6 are the prefix lengths clients are grouped
	// by; 0 means DefaultPrefixLen4 (24) and DefaultPrefixLen6 (56).
	PrefixLen4 int
	PrefixLen6 int
	// MaxPrefixes bounds the prefixes tracked (the agent's table and the
	// XDP program's LRU map); 0 means DefaultMaxPrefixes, and it is at
	// least 16. The least recently charged one is forgotten first.
	MaxPrefixes int
	// MaxAttempts bounds the connection attempts remembered as admitted,
	// by (prefix, first DCID), so that an attempt is charged once and its
	// later datagrams pass while its prefix is over; 0 means
	// DefaultMaxAttempts, and it is at least 64. The oldest go first.
	MaxAttempts int
	// Action is what an over-rate Initial gets.
	Action Action
	// RefuseRate bounds the CONNECTION_REFUSED closes each agent worker
	// builds per second (Refuse); past it over-rate Initials are dropped.
	// A close costs about 5 us (its Initial keys are derived per packet),
	// so this bounds what a flood of over-rate Initials costs the agent.
	// 0 means DefaultRefuseRate.
	RefuseRate float64
}

// DefaultRefuseRate is Config.RefuseRate's default: about 5 % of a core
// per agent worker.
const DefaultRefuseRate = 10_000

// Enabled reports whether the limit is on.
func (c Config) Enabled() bool { return c.Rate > 0 }

// WithDefaults validates c and fills its zero fields.
func (c Config) WithDefaults() (Config, error) {
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return c, fmt.Errorf("prefixrate: Rate %v is not a finite number >= 0", c.Rate)
	}
	if c.Rate > 0 && c.Rate < 1e-3 {
		return c, fmt.Errorf("prefixrate: Rate %v below one per 1000 s", c.Rate)
	}
	if c.RefuseRate < 0 || math.IsNaN(c.RefuseRate) || math.IsInf(c.RefuseRate, 0) {
		return c, fmt.Errorf("prefixrate: RefuseRate %v is not a finite number >= 0", c.RefuseRate)
	}
	if c.RefuseRate == 0 {
		c.RefuseRate = DefaultRefuseRate
	}
	if c.Burst < 0 || c.MaxPrefixes < 0 || c.MaxAttempts < 0 {
		return c, errors.New("prefixrate: negative Burst, MaxPrefixes or MaxAttempts")
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	// One set per shard at least.
	c.MaxAttempts = max(c.MaxAttempts, numShards*attemptWays)
	if c.Burst == 0 {
		c.Burst = max(1, int(math.Ceil(2*c.Rate)))
	}
	if c.PrefixLen4 == 0 {
		c.PrefixLen4 = DefaultPrefixLen4
	}
	if c.PrefixLen6 == 0 {
		c.PrefixLen6 = DefaultPrefixLen6
	}
	if c.PrefixLen4 < 1 || c.PrefixLen4 > 32 || c.PrefixLen6 < 1 || c.PrefixLen6 > 128 {
		return c, fmt.Errorf("prefixrate: prefix lengths /%d and /%d outside 1..32 and 1..128", c.PrefixLen4, c.PrefixLen6)
	}
	if c.MaxPrefixes == 0 {
		c.MaxPrefixes = DefaultMaxPrefixes
	}
	// One entry per shard at least.
	c.MaxPrefixes = max(c.MaxPrefixes, numShards)
	if c.Action != Refuse && c.Action != Drop {
		return c, fmt.Errorf("prefixrate: unknown %v", c.Action)
	}
	return c, nil
}

// Interval is the time one token takes to refill.
func (c Config) Interval() time.Duration {
	if c.Rate <= 0 {
		return 0
	}
	return max(1, time.Duration(float64(time.Second)/c.Rate))
}

// Tolerance is (Burst-1)*Interval: a prefix whose TAT is further than this
// ahead of now has no token left.
func (c Config) Tolerance() time.Duration {
	return time.Duration(max(c.Burst-1, 0)) * c.Interval()
}

// PrefixOf returns the prefix addr is counted in; an IPv4-mapped IPv6
// address counts as IPv4. The zero Prefix for an invalid address.
func (c Config) PrefixOf(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap().WithZone("")
	bits := c.PrefixLen6
	if addr.Is4() {
		bits = c.PrefixLen4
	}
	p, err := addr.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// EmptyFunc is called when a token taken at now empties prefix's bucket:
// until tat - Tolerance no further token is left. Times are the
// Limiter's clock (Unix nanoseconds of the caller's now).
type EmptyFunc func(prefix netip.Prefix, tat, now int64)

// numShards spreads the workers' lookups over independent locks.
const numShards = 16

// Limiter is the agent's table of prefix buckets: at most
// Config.MaxPrefixes entries in fixed arrays, so a new prefix allocates
// nothing once the shard's map has grown. Safe for concurrent use.
type Limiter struct {
	cfg       Config
	interval  int64
	tolerance int64
	onEmpty   EmptyFunc
	seed      maphash.Seed // keys the attempts' hashes: unpredictable sets
	shards    [numShards]shard
}

type shard struct {
	mu      sync.Mutex
	index   map[netip.Prefix]int32
	entries []entry // fixed capacity; a slot is reused in LRU order
	// head is the most recently charged entry, tail the least; -1: none.
	head, tail int32
	limit      int
	evictions  uint64
	refused    uint64
	allowed    uint64

	// attempts are the connection attempts of the shard's prefixes
	// admitted lately, a set-associative table of attemptWays ways: an
	// attempt's key picks a set, a new attempt replaces the oldest of it.
	attempts []attempt
}

// attemptWays is the associativity of the attempts' table.
const attemptWays = 4

// attempt is an admitted connection attempt: a hash of its prefix and
// first DCID (never 0; 0 marks a free way), and when it was admitted.
type attempt struct {
	key uint64
	at  int64
}

type entry struct {
	prefix     netip.Prefix
	tat        int64
	prev, next int32
}

// NewLimiter returns a Limiter for cfg (defaults filled in), or nil when
// cfg is off. onEmpty may be nil; it runs outside the Limiter's locks.
func NewLimiter(cfg Config, onEmpty EmptyFunc) (*Limiter, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil || !cfg.Enabled() {
		return nil, err
	}
	l := &Limiter{cfg: cfg, interval: int64(cfg.Interval()), tolerance: int64(cfg.Tolerance()), onEmpty: onEmpty, seed: maphash.MakeSeed()}
	per := cfg.MaxPrefixes / numShards
	sets := cfg.MaxAttempts / (numShards * attemptWays)
	for i := range l.shards {
		s := &l.shards[i]
		s.limit = per
		if i < cfg.MaxPrefixes%numShards {
			s.limit++
		}
		s.index = make(map[netip.Prefix]int32, s.limit)
		s.entries = make([]entry, 0, s.limit)
		s.head, s.tail = -1, -1
		s.attempts = make([]attempt, sets*attemptWays)
	}
	return l, nil
}

// Config returns the configuration in effect.
func (l *Limiter) Config() Config { return l.cfg }

func (l *Limiter) shardOf(p netip.Prefix) *shard {
	a := p.Addr().As16()
	h := uint32(2166136261)
	for _, b := range a {
		h = (h ^ uint32(b)) * 16777619
	}
	return &l.shards[h%numShards]
}

// Over reports whether addr's prefix has no token left at now; it takes
// none. The agent asks before validating a token, so that an over-rate
// prefix costs no validation.
func (l *Limiter) Over(addr netip.Addr, now time.Time) bool {
	p := l.cfg.PrefixOf(addr)
	s := l.shardOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[p]
	return ok && s.entries[i].tat > now.UnixNano()+l.tolerance
}

// Allow takes a token from addr's prefix at now, for a validated Initial,
// and reports whether there was one. A refusal changes nothing.
func (l *Limiter) Allow(addr netip.Addr, now time.Time) bool {
	p := l.cfg.PrefixOf(addr)
	t := now.UnixNano()
	s := l.shardOf(p)
	s.mu.Lock()
	next, ok := l.takeLocked(s, p, t)
	s.mu.Unlock()
	l.emptied(p, next, t, ok)
	return ok
}

// AllowAttempt is Allow for the validated Initial of a connection attempt
// whose first DCID is dcid: the attempt's first Initial takes a token and
// is remembered (Config.MaxAttempts), so that its other datagrams (a
// ClientHello in two, retransmissions) take none and pass even while the
// prefix is over. first reports that this Initial took the token.
func (l *Limiter) AllowAttempt(addr netip.Addr, dcid []byte, now time.Time) (ok, first bool) {
	p := l.cfg.PrefixOf(addr)
	t := now.UnixNano()
	key := l.attemptKey(p, dcid)
	s := l.shardOf(p)
	s.mu.Lock()
	if s.hasAttempt(key) {
		s.mu.Unlock()
		return true, false
	}
	next, ok := l.takeLocked(s, p, t)
	if ok {
		s.addAttempt(key, t)
	}
	s.mu.Unlock()
	l.emptied(p, next, t, ok)
	return ok, ok
}

// Admitted reports whether the connection attempt from addr's prefix whose
// first DCID is dcid took its token (AllowAttempt) and is still
// remembered: its Initials are not over the rate.
func (l *Limiter) Admitted(addr netip.Addr, dcid []byte) bool {
	p := l.cfg.PrefixOf(addr)
	key := l.attemptKey(p, dcid)
	s := l.shardOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasAttempt(key)
}

// attemptKey hashes prefix p and a DCID (at most 20 bytes count) into an
// attempt's key; never 0.
func (l *Limiter) attemptKey(p netip.Prefix, dcid []byte) uint64 {
	var b [16 + 2 + 20]byte
	a := p.Addr().As16()
	copy(b[:16], a[:])
	b[16] = byte(p.Bits())
	n := copy(b[18:], dcid)
	b[17] = byte(n)
	return maphash.Bytes(l.seed, b[:18+n]) | 1
}

// set returns the ways of the set key falls in.
func (s *shard) set(key uint64) []attempt {
	sets := uint64(len(s.attempts) / attemptWays)
	i := (key >> 32) % sets * attemptWays
	return s.attempts[i : i+attemptWays]
}

func (s *shard) hasAttempt(key uint64) bool {
	for _, a := range s.set(key) {
		if a.key == key {
			return true
		}
	}
	return false
}

// addAttempt remembers key in place of the oldest attempt of its set.
func (s *shard) addAttempt(key uint64, now int64) {
	set := s.set(key)
	oldest := 0
	for i := range set {
		if set[i].key == 0 {
			oldest = i
			break
		}
		if set[i].at < set[oldest].at {
			oldest = i
		}
	}
	set[oldest] = attempt{key: key, at: now}
}

// emptied calls the OnEmpty hook when a token taken at now (ok) left the
// bucket of p empty until next.
func (l *Limiter) emptied(p netip.Prefix, next, now int64, ok bool) {
	if ok && next > now+l.tolerance && l.onEmpty != nil {
		l.onEmpty(p, next, now)
	}
}

// takeLocked takes a token from p's bucket at t, making its entry, and
// returns the bucket's new TAT and whether there was one. Called with
// s.mu held.
func (l *Limiter) takeLocked(s *shard, p netip.Prefix, t int64) (int64, bool) {
	i, ok := s.index[p]
	if !ok {
		i = s.insert(p, t)
	}
	e := &s.entries[i]
	next := max(e.tat, t) + l.interval
	if next-t > l.tolerance+l.interval {
		s.refused++
		return 0, false
	}
	e.tat = next
	s.touch(i)
	s.allowed++
	return next, true
}

// insert makes an entry for p with a full bucket, reusing the least
// recently charged slot when the shard is full. Called with s.mu held.
func (s *shard) insert(p netip.Prefix, now int64) int32 {
	var i int32
	if len(s.entries) < s.limit {
		s.entries = append(s.entries, entry{})
		i = int32(len(s.entries) - 1)
	} else {
		i = s.tail
		delete(s.index, s.entries[i].prefix)
		s.unlink(i)
		s.evictions++
	}
	s.entries[i] = entry{prefix: p, tat: now, prev: -1, next: -1}
	s.index[p] = i
	s.pushFront(i)
	return i
}

func (s *shard) touch(i int32) {
	if s.head == i {
		return
	}
	s.unlink(i)
	s.pushFront(i)
}

func (s *shard) unlink(i int32) {
	e := &s.entries[i]
	if e.prev >= 0 {
		s.entries[e.prev].next = e.next
	} else {
		s.head = e.next
	}
	if e.next >= 0 {
		s.entries[e.next].prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (s *shard) pushFront(i int32) {
	e := &s.entries[i]
	e.prev, e.next = -1, s.head
	if s.head >= 0 {
		s.entries[s.head].prev = i
	}
	s.head = i
	if s.tail < 0 {
		s.tail = i
	}
}

// Stats counts what a Limiter did.
type Stats struct {
	// Prefixes is the number of prefixes tracked now.
	Prefixes int
	// Allowed and Refused count Allow's answers; Evictions the prefixes
	// forgotten to make room.
	Allowed, Refused, Evictions uint64
}

// Stats returns the Limiter's counters.
func (l *Limiter) Stats() Stats {
	var st Stats
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		st.Prefixes += len(s.index)
		st.Allowed += s.allowed
		st.Refused += s.refused
		st.Evictions += s.evictions
		s.mu.Unlock()
	}
	return st
}
