package token

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeToken returns a distinct HeaderLen-byte token identity for i.
func fakeToken(i uint64) []byte {
	tok := make([]byte, HeaderLen)
	tok[0] = byte(SourceHost)<<6 | byte(TypeNewToken)<<4
	binary.BigEndian.PutUint64(tok[1:], i)
	binary.BigEndian.PutUint64(tok[9:], 1764460800000)
	return tok
}

func newTestReplayFilter(t testing.TB, cfg ReplayFilterConfig) *ReplayFilter {
	t.Helper()
	f, err := NewReplayFilter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReplayFilterRules(t *testing.T) {
	f := newTestReplayFilter(t, ReplayFilterConfig{})
	now := time.Unix(1764460800, 0)
	tok, other := fakeToken(1), fakeToken(2)
	dcid, dcid2 := []byte("dcid-one"), []byte("dcid-two")
	if err := f.Use(tok, dcid, now); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := f.Use(tok, dcid, now.Add(time.Second)); err != nil {
		t.Fatalf("retransmission (same DCID): %v", err)
	}
	err := f.Use(tok, dcid2, now)
	if !errors.Is(err, ErrReplayed) || ReasonOf(err) != ReasonReplayed || err.Error() != "token rejected: replayed" {
		t.Fatalf("other DCID: %v, want ErrReplayed", err)
	}
	if err := f.Use(tok, nil, now); !errors.Is(err, ErrReplayed) {
		t.Fatalf("empty DCID: %v, want ErrReplayed", err)
	}
	// A token whose header differs in one bit is another token.
	if err := f.Use(other, dcid2, now); err != nil {
		t.Fatalf("another token: %v", err)
	}
	// The original use is still a retransmission after the refusals.
	if err := f.Use(tok, dcid, now); err != nil {
		t.Fatalf("retransmission after a replay: %v", err)
	}
	if err := f.Use(tok[:HeaderLen-1], dcid, now); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short token: %v", err)
	}
	st := f.Stats()
	if st.FirstUses != 2 || st.Retransmissions != 2 || st.Replays != 2 || st.Rotations != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReplayFilterWindow: a token is remembered for at least the window
// after its first use, whenever in a generation it came; after two
// windows it is forgotten (by then it has expired anyway).
func TestReplayFilterWindow(t *testing.T) {
	const w = time.Hour
	f := newTestReplayFilter(t, ReplayFilterConfig{Window: w})
	t0 := time.Unix(1764460800, 0)
	early, late := fakeToken(1), fakeToken(2)
	d, other := []byte("dcid-one"), []byte("dcid-two")
	// The two may share a shard or not (each shard rotates on its own
	// clock); the expectations below hold either way.
	if err := f.Use(early, d, t0); err != nil {
		t.Fatal(err)
	}
	if err := f.Use(late, d, t0.Add(w*9/10)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tok   []byte
		at    time.Duration
		fresh bool // forgotten: accepted under another DCID
	}{
		{early, w - time.Second, false},
		{late, w + w/2, false},          // after a rotation, in the older generation
		{late, w*9/10 + w, false},       // a window after its first use
		{early, 3 * w, true},            // long expired: forgotten
		{late, 3*w + time.Second, true}, // the same
	} {
		err := f.Use(tc.tok, other, t0.Add(tc.at))
		if tc.fresh != (err == nil) {
			t.Errorf("at %v: %v, want fresh=%v", tc.at, err, tc.fresh)
		}
	}
	if st := f.Stats(); st.Rotations == 0 || st.EarlyRotations != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestReplayFilterRetransmitWindow: the same token and DCID is the same
// Initial only for the retransmission window; the same datagram replayed
// later is refused.
func TestReplayFilterRetransmitWindow(t *testing.T) {
	f := newTestReplayFilter(t, ReplayFilterConfig{})
	t0 := time.Unix(1764460800, 0)
	tok, d := fakeToken(1), []byte("dcid-one")
	for _, tc := range []struct {
		at   time.Duration
		want error
	}{
		{0, nil},
		{time.Second, nil},
		{DefaultRetransmitWindow - time.Millisecond, nil},
		{3 * DefaultRetransmitWindow, ErrReplayed},
		{time.Hour, ErrReplayed},
	} {
		if err := f.Use(tok, d, t0.Add(tc.at)); err != tc.want {
			t.Errorf("at %v: %v, want %v", tc.at, err, tc.want)
		}
	}
}

// TestReplayFilterBounded: far more tokens than the capacity leave the
// memory where it was (generations rotate early and are counted), and the
// newest tokens are still remembered.
func TestReplayFilterBounded(t *testing.T) {
	const capacity = 1024
	f := newTestReplayFilter(t, ReplayFilterConfig{Capacity: capacity})
	now := time.Unix(1764460800, 0)
	d := []byte("dcid-one")
	for i := range uint64(64 * capacity) {
		_ = f.Use(fakeToken(i), d, now) // a few false positives: counted below
	}
	st := f.Stats()
	// Every token is fresh, so replays and retransmissions are false
	// positives (of the identity, and of identity and DCID). At most two
	// full generations answer: twice the 0.07 % of one for each, with a
	// wide margin (expected about 60 each of 65536, deviation 8).
	if fp := st.Replays + st.Retransmissions; fp > 64*capacity*6/1000 {
		t.Errorf("%d of %d fresh tokens taken for replays or retransmissions", fp, 64*capacity)
	}
	// 16 shards x 2 filters x 2 generations x 64 tokens x 16 bits = 8 KiB.
	if want := uint64(capacity * 8); st.MemoryBytes != want {
		t.Errorf("memory %d bytes, want %d", st.MemoryBytes, want)
	}
	if st.EarlyRotations == 0 || st.FirstUses+st.Replays+st.Retransmissions != 64*capacity {
		t.Errorf("stats %+v", st)
	}
	last := fakeToken(64*capacity - 1)
	if err := f.Use(last, []byte("dcid-two"), now); !errors.Is(err, ErrReplayed) {
		t.Errorf("the newest token was forgotten: %v", err)
	}
}

// TestReplayFilterFalsePositiveRate fills every shard's generation to its
// capacity and probes keys never inserted: the rate must match the Bloom
// filter formula (about 0.07 % per generation for 16 bits per key, k = 7).
func TestReplayFilterFalsePositiveRate(t *testing.T) {
	f := newTestReplayFilter(t, ReplayFilterConfig{Capacity: 1 << 14})
	rng := rand.New(rand.NewPCG(1, 2))
	var st ReplayStats
	for i := range f.shards {
		b := &f.shards[i].ids
		b.maybeRotate(0, &st)
		for range b.capacity {
			b.add(rng.Uint64())
		}
	}
	const probes = 1 << 20
	hits := 0
	for range probes {
		if f.shards[rng.IntN(replayShards)].ids.has(rng.Uint64()) {
			hits++
		}
	}
	b := &f.shards[0].ids
	keys, m := float64(b.capacity), float64(b.mask+1)
	want := math.Pow(1-math.Exp(-replayHashes*keys/m), replayHashes)
	got := float64(hits) / probes
	t.Logf("false-positive rate %.4f %% (formula %.4f %%), %d bytes per generation and shard", 100*got, 100*want, int(m/8))
	if got > 2*want || want > 0.001 {
		t.Errorf("false-positive rate %.5f, formula %.5f", got, want)
	}
}

// TestReplayFilterConcurrentUse: the same token under different DCIDs from
// many goroutines at once is accepted exactly once.
func TestReplayFilterConcurrentUse(t *testing.T) {
	f := newTestReplayFilter(t, ReplayFilterConfig{})
	now := time.Unix(1764460800, 0)
	for round := range uint64(50) {
		tok := fakeToken(round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for g := range 8 {
			wg.Go(func() {
				if f.Use(tok, []byte{byte(g), 1, 2, 3, 4, 5, 6, 7}, now) == nil {
					mu.Lock()
					accepted++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if accepted != 1 {
			t.Fatalf("round %d: %d of 8 DCIDs accepted, want 1", round, accepted)
		}
	}
}

func TestReplayFilterConfigErrors(t *testing.T) {
	for _, cfg := range []ReplayFilterConfig{{Window: -1}, {Capacity: -1}, {RetransmitWindow: -1}} {
		if _, err := NewReplayFilter(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	f := newTestReplayFilter(t, ReplayFilterConfig{Capacity: 1})
	s := &f.shards[0]
	if s.ids.windowNs != (DefaultNewTokenMaxAge+DefaultMaxFuture).Nanoseconds() || s.uses.windowNs != DefaultRetransmitWindow.Nanoseconds() || s.ids.mask != 63 {
		t.Errorf("defaults: windows %d, %d ns, mask %d", s.ids.windowNs, s.uses.windowNs, s.ids.mask)
	}
	if _, err := NewReplayFilter(ReplayFilterConfig{Window: time.Second, RetransmitWindow: 2 * time.Second}); err == nil {
		t.Error("retransmit window longer than the window accepted")
	}
	if f := newTestReplayFilter(t, ReplayFilterConfig{Window: time.Second}); f.shards[0].uses.windowNs != time.Second.Nanoseconds() {
		t.Errorf("retransmit window %d ns for a 1 s window", f.shards[0].uses.windowNs)
	}
}

func TestReplayFilterDoesNotAllocate(t *testing.T) {
	f := newTestReplayFilter(t, ReplayFilterConfig{})
	now := time.Unix(1764460800, 0)
	d := make([]byte, MaxCIDLen)
	var i uint64
	toks := make([][]byte, 200)
	for j := range toks {
		toks[j] = fakeToken(uint64(j))
		_ = f.Use(toks[j], d, now) // allocate the shards' arrays first
	}
	if n := testing.AllocsPerRun(100, func() {
		_ = f.Use(toks[i%200], d, now)
		i++
	}); n != 0 {
		t.Errorf("%v allocations per Use", n)
	}
}

func FuzzReplayFilter(f *testing.F) {
	f.Add(fakeToken(1), []byte("dcid-one"), []byte("dcid-two"))
	f.Add([]byte{}, []byte{}, []byte{0})
	f.Add(make([]byte, MaxTokenLen), make([]byte, 255), make([]byte, 20))
	rf := newTestReplayFilter(f, ReplayFilterConfig{Capacity: 64})
	now := time.Unix(1764460800, 0)
	f.Fuzz(func(t *testing.T, tok, d1, d2 []byte) {
		err := rf.Use(tok, d1, now)
		if len(tok) < HeaderLen {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("short token: %v", err)
			}
			return
		}
		// The same Initial again at once gets the same answer: nil after a
		// first use or retransmission, ErrReplayed after a replay (which
		// changed nothing).
		if err2 := rf.Use(tok, d1, now); err2 != err {
			t.Fatalf("repeat: %v, first %v", err2, err)
		}
		_ = rf.Use(tok, d2, now)
	})
}

// benchFilter returns a filter and 2^16 distinct token identities.
func benchFilter(b *testing.B) (*ReplayFilter, [][]byte) {
	f := newTestReplayFilter(b, ReplayFilterConfig{})
	toks := make([][]byte, 1<<16)
	for i := range toks {
		toks[i] = fakeToken(uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	return f, toks
}

func BenchmarkReplayFilterUse(b *testing.B) {
	f, toks := benchFilter(b)
	now, d := time.Unix(1764460800, 0), []byte("dcid-one")
	for i := range b.N {
		_ = f.Use(toks[i&(1<<16-1)], d, now)
	}
}

func BenchmarkReplayFilterUseParallel(b *testing.B) {
	f, toks := benchFilter(b)
	now, d := time.Unix(1764460800, 0), []byte("dcid-one")
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(1 << 16)
		for pb.Next() {
			_ = f.Use(toks[i&(1<<16-1)], d, now)
			i++
		}
	})
}
