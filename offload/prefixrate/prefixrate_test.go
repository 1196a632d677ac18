package prefixrate

import (
	"net/netip"
	"testing"
	"time"
)

// t0 is an arbitrary start of the virtual clock the tests pass in.
var t0 = time.Unix(1_700_000_000, 0)

func newLimiter(tb testing.TB, cfg Config, onEmpty EmptyFunc) *Limiter {
	tb.Helper()
	l, err := NewLimiter(cfg, onEmpty)
	if err != nil || l == nil {
		tb.Fatalf("NewLimiter(%+v) = %v, %v", cfg, l, err)
	}
	return l
}

// TestBucketRefillsAtRate: a burst of Burst Initials passes at once, the
// next is refused, and one more token comes back every 1/Rate, never
// earlier; a refused Initial takes nothing.
func TestBucketRefillsAtRate(t *testing.T) {
	l := newLimiter(t, Config{Rate: 10, Burst: 4}, nil)
	a := netip.MustParseAddr("198.51.100.7")
	for i := range 4 {
		if !l.Allow(a, t0) {
			t.Fatalf("Initial %d of the burst refused", i)
		}
	}
	if l.Allow(a, t0) || !l.Over(a, t0) {
		t.Fatal("the 5th Initial of a burst of 4 passed")
	}
	for k := 1; k <= 5; k++ {
		at := t0.Add(time.Duration(k) * 100 * time.Millisecond)
		if l.Allow(a, at.Add(-time.Nanosecond)) {
			t.Fatalf("token %d came back before %v", k, at.Sub(t0))
		}
		if !l.Allow(a, at) {
			t.Fatalf("token %d not back at %v", k, at.Sub(t0))
		}
		if l.Allow(a, at) {
			t.Fatalf("two tokens back at %v", at.Sub(t0))
		}
	}
	// After a long quiet time the bucket is full again, and no fuller.
	later := t0.Add(time.Hour)
	for i := range 4 {
		if !l.Allow(a, later) {
			t.Fatalf("Initial %d of the second burst refused", i)
		}
	}
	if l.Allow(a, later) {
		t.Fatal("the bucket held more than Burst tokens")
	}
	st := l.Stats()
	if st.Allowed != 4+5+4 || st.Prefixes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPrefixesIndependent: an over-rate prefix does not touch another, and
// addresses in one /24 (or /56) share one bucket.
func TestPrefixesIndependent(t *testing.T) {
	l := newLimiter(t, Config{Rate: 1, Burst: 2}, nil)
	same := []string{"203.0.113.1", "203.0.113.200", "::ffff:203.0.113.9"}
	for i, s := range same {
		ok := l.Allow(netip.MustParseAddr(s), t0)
		if ok != (i < 2) {
			t.Fatalf("%s: allowed %v", s, ok)
		}
	}
	for _, s := range []string{"203.0.114.1", "2001:db8:0:100::1", "2001:db8:0:1ff::2"} {
		if !l.Allow(netip.MustParseAddr(s), t0) {
			t.Fatalf("%s refused: another prefix's rate leaked", s)
		}
	}
	// 2001:db8:0:100::/56 holds both IPv6 addresses: its second token is gone.
	if !l.Over(netip.MustParseAddr("2001:db8:0:1aa::3"), t0) {
		t.Fatal("the /56 has one token of 2 taken twice, but is not over")
	}
	if l.Over(netip.MustParseAddr("2001:db8:0:200::1"), t0) {
		t.Fatal("a fresh /56 is over")
	}
}

// TestLimiterBounded: a spray of prefixes never tracks more than
// MaxPrefixes; the least recently charged is forgotten first.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(t, Config{Rate: 1, Burst: 1, MaxPrefixes: 64}, nil)
	hot := netip.MustParseAddr("192.0.2.1")
	if !l.Allow(hot, t0) {
		t.Fatal("first Initial refused")
	}
	for i := range 10_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		l.Allow(a, t0)
		if i%97 == 0 {
			l.Allow(hot, t0) // refused, and so not refreshed: may go
		}
		if n := l.Stats().Prefixes; n > 64 {
			t.Fatalf("%d prefixes tracked, bound 64", n)
		}
	}
	// Every new prefix past 64 took a slot (the hot one came back after
	// each eviction, and took one too).
	if st := l.Stats(); st.Prefixes != 64 || st.Evictions < 10_001-64 {
		t.Fatalf("stats %+v, want 64 prefixes and at least %d evictions", st, 10_001-64)
	}
	// Once forgotten, a prefix starts over with a full bucket.
	for i := range 10_000 {
		l.Allow(netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 1}), t0)
	}
	if !l.Allow(hot, t0) {
		t.Fatal("an evicted prefix is still limited")
	}
}

// TestLRUKeepsRecent: within one shard, the prefix charged most recently
// survives a new one; the least recent goes.
func TestLRUKeepsRecent(t *testing.T) {
	l := newLimiter(t, Config{Rate: 1, Burst: 1, MaxPrefixes: 16}, nil)
	// Prefixes of the same shard as a.
	a := netip.MustParseAddr("192.0.2.1")
	sh := l.shardOf(l.cfg.PrefixOf(a))
	var same []netip.Addr
	for i := 0; len(same) < 3; i++ {
		b := netip.AddrFrom4([4]byte{10, 0, byte(i), 1})
		if l.shardOf(l.cfg.PrefixOf(b)) == sh {
			same = append(same, b)
		}
	}
	l.Allow(same[0], t0)      // slot of the shard (1 entry)
	l.Allow(same[1], t0)      // evicts same[0]
	if l.Allow(same[1], t0) { // same[1] is still tracked: empty
		t.Fatal("the newest prefix was forgotten")
	}
	if !l.Allow(same[0], t0) {
		t.Fatal("the oldest prefix was kept")
	}
}

// TestOnEmptyHook: the hook fires when a token empties the bucket, with
// the TAT that the XDP program compares against its clock.
func TestOnEmptyHook(t *testing.T) {
	var got []int64
	cfg := Config{Rate: 4, Burst: 3}
	l := newLimiter(t, cfg, func(p netip.Prefix, tat, now int64) {
		if p != netip.MustParsePrefix("198.51.100.0/24") || now != t0.UnixNano() {
			t.Errorf("hook for %v at %d", p, now)
		}
		got = append(got, tat)
	})
	a := netip.MustParseAddr("198.51.100.1")
	for range 4 {
		l.Allow(a, t0)
	}
	want := t0.UnixNano() + 3*int64(250*time.Millisecond)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("hook calls %v, want one with TAT %d", got, want)
	}
	// Exactly then the bucket has a token again.
	if tat := time.Unix(0, want); l.Over(a, tat.Add(-l.cfg.Tolerance())) ||
		!l.Over(a, tat.Add(-l.cfg.Tolerance()-1)) {
		t.Fatal("Over disagrees with the TAT handed out")
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Rate: 2.5}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Burst != 5 || c.PrefixLen4 != 24 || c.PrefixLen6 != 56 || c.MaxPrefixes != DefaultMaxPrefixes {
		t.Fatalf("defaults %+v", c)
	}
	if c.Interval() != 400*time.Millisecond || c.Tolerance() != 1600*time.Millisecond {
		t.Fatalf("interval %v tolerance %v", c.Interval(), c.Tolerance())
	}
	for _, bad := range []Config{{Rate: -1}, {Rate: 1, PrefixLen4: 33}, {Rate: 1, PrefixLen6: 129}, {Rate: 1, Burst: -1}, {Rate: 1, Action: 7}} {
		if _, err := bad.WithDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if l, err := NewLimiter(Config{}, nil); l != nil || err != nil {
		t.Fatalf("zero Config: %v, %v", l, err)
	}
	if a, err := ParseAction("drop"); err != nil || a != Drop || a.String() != "drop" {
		t.Fatal("ParseAction(drop)")
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l := newLimiter(t, Config{Rate: 1000, Burst: 1000, MaxPrefixes: 256}, nil)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		l.Allow(a, t0)
		l.Over(a, t0)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Allow", allocs)
	}
}

// TestAttemptChargedOnce: a connection attempt (prefix, first DCID) takes
// one token, however many datagrams its ClientHello spans, and its later
// datagrams pass while the prefix is over; the same DCID from another
// prefix is another attempt.
func TestAttemptChargedOnce(t *testing.T) {
	l := newLimiter(t, Config{Rate: 10, Burst: 2}, nil)
	a := netip.MustParseAddr("198.51.100.7")
	dcidA, dcidB, dcidC := []byte("attempt-a"), []byte("attempt-b"), []byte("attempt-c")
	if ok, first := l.AllowAttempt(a, dcidA, t0); !ok || !first {
		t.Fatalf("attempt A's first datagram: ok %v, first %v", ok, first)
	}
	if ok, first := l.AllowAttempt(a, dcidA, t0); !ok || first {
		t.Fatalf("attempt A's second datagram: ok %v, first %v; want passed, uncharged", ok, first)
	}
	if ok, _ := l.AllowAttempt(a, dcidB, t0); !ok {
		t.Fatal("attempt B refused with a token left")
	}
	if !l.Over(a, t0) {
		t.Fatal("two attempts did not empty a bucket of 2")
	}
	// Over now; A's and B's later datagrams still pass, a new attempt not.
	for _, d := range [][]byte{dcidA, dcidB} {
		if ok, first := l.AllowAttempt(a, d, t0.Add(time.Millisecond)); !ok || first {
			t.Fatalf("%s while over: ok %v, first %v", d, ok, first)
		}
		if !l.Admitted(a, d) {
			t.Fatalf("%s not admitted", d)
		}
	}
	if ok, _ := l.AllowAttempt(a, dcidC, t0); ok {
		t.Fatal("a third attempt passed a bucket of 2")
	}
	if l.Admitted(a, dcidC) || l.Admitted(netip.MustParseAddr("198.51.101.7"), dcidA) {
		t.Fatal("a refused attempt, or another prefix's, counted as admitted")
	}
	if st := l.Stats(); st.Allowed != 2 || st.Refused != 1 {
		t.Fatalf("stats %+v: want 2 tokens taken, 1 refused", st)
	}
}

// TestAttemptsBounded: 10 000 attempts leave at most MaxAttempts
// remembered, the newest of each set kept.
func TestAttemptsBounded(t *testing.T) {
	l := newLimiter(t, Config{Rate: 1e9, Burst: 1 << 20, MaxAttempts: 64}, nil)
	a := netip.MustParseAddr("192.0.2.1")
	var dcid [8]byte
	for i := range 10_000 {
		dcid[0], dcid[1] = byte(i), byte(i>>8)
		if ok, _ := l.AllowAttempt(a, dcid[:], t0.Add(time.Duration(i))); !ok {
			t.Fatalf("attempt %d refused", i)
		}
	}
	n := 0
	for i := range l.shards {
		if len(l.shards[i].attempts) > 64 {
			t.Fatalf("shard %d holds %d ways", i, len(l.shards[i].attempts))
		}
		for _, at := range l.shards[i].attempts {
			if at.key != 0 {
				n++
			}
		}
	}
	if n == 0 || n > 64 {
		t.Fatalf("%d attempts remembered, want 1..64", n)
	}
	if !l.Admitted(a, dcid[:]) {
		t.Fatal("the newest attempt was forgotten")
	}
}

func TestAllowAttemptDoesNotAllocate(t *testing.T) {
	l := newLimiter(t, Config{Rate: 100, Burst: 10}, nil)
	a := netip.MustParseAddr("192.0.2.1")
	dcid := []byte("0123456789")
	if n := testing.AllocsPerRun(100, func() {
		l.AllowAttempt(a, dcid, t0)
		l.Admitted(a, dcid)
	}); n != 0 {
		t.Fatalf("%v allocations per attempt", n)
	}
}
