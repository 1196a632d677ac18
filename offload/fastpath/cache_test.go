package fastpath

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

const paperN = 1_200_000 // 40 k connections/s over T_W = 30 s

func TestNoFalseNegativesAtPaperLoad(t *testing.T) {
	c := newTestCache(t)
	var buf [8]byte
	s := newCIDStream(1)
	for range paperN {
		if err := c.Insert(s.next(buf[:])); err != nil {
			t.Fatal(err)
		}
	}
	s = newCIDStream(1)
	for i := range paperN {
		if cid := s.next(buf[:]); !c.Lookup(cid) {
			t.Fatalf("CID #%d %x inserted but not found", i, cid)
		}
	}
}

// TestFalsePositiveRate measures the FP rate with one table holding 1.2 M
// CIDs (the paper's figure) and with both tables full (the worst case a
// lookup sees just before a rotation).
func TestFalsePositiveRate(t *testing.T) {
	c := newTestCache(t)
	var buf [8]byte
	in := newCIDStream(2)
	for range paperN {
		_ = c.Insert(in.next(buf[:]))
	}
	const probes = 200_000
	measure := func() float64 {
		// Random 64-bit CIDs from another seed: a collision with an
		// inserted CID has probability ~1e-8, negligible here.
		out := newCIDStream(3)
		hits := 0
		for range probes {
			if c.Lookup(out.next(buf[:])) {
				hits++
			}
		}
		return float64(hits) / probes
	}
	// PASSIVE is empty here, so no probe re-inserts anything.
	one := measure()
	theory := theoreticalFP(paperN)
	t.Logf("FP rate, 1.2 M CIDs in ACTIVE, empty PASSIVE: measured %.4f, theory %.4f", one, theory)
	if math.Abs(one-theory) > 0.003 {
		t.Errorf("FP rate %.4f too far from theory %.4f", one, theory)
	}

	c.Rotate()
	for range paperN {
		_ = c.Insert(in.next(buf[:]))
	}
	// Probes that hit only PASSIVE re-insert into ACTIVE (~2 % of the
	// probes, after they are counted), which barely moves the rate.
	both := measure()
	theory2 := 1 - (1-theory)*(1-theory)
	t.Logf("FP rate, 1.2 M CIDs in each table: measured %.4f, theory %.4f", both, theory2)
	if math.Abs(both-theory2) > 0.005 {
		t.Errorf("two-table FP rate %.4f too far from theory %.4f", both, theory2)
	}
}

func cidN(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func TestAgingWithRotate(t *testing.T) {
	c := newTestCache(t)
	a, b, r := cidN(1), cidN(2), cidN(3)
	for _, cid := range [][]byte{a, b, r} {
		if err := c.Insert(cid); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Lookup(a) || !c.Lookup(b) || !c.Lookup(r) {
		t.Fatal("fresh inserts must hit")
	}
	c.Rotate() // window 1 ends: entries move to PASSIVE
	if c.Generation() != 1 || c.ActiveIndex() != 1 {
		t.Fatalf("after one rotation: generation %d, active %d", c.Generation(), c.ActiveIndex())
	}
	// r is refreshed by a lookup in PASSIVE, which re-inserts it in ACTIVE.
	if !c.Lookup(r) {
		t.Fatal("entry must survive one rotation")
	}
	if !testBits(c.tables[c.ActiveIndex()], ptr(Indices(c.Hash(r)))) {
		t.Fatal("a PASSIVE hit must re-insert into ACTIVE")
	}
	if testBits(c.tables[c.ActiveIndex()], ptr(Indices(c.Hash(a)))) {
		t.Fatal("a CID never refreshed must not be in the new ACTIVE table")
	}
	c.Rotate() // window 2 ends: a and b were not refreshed
	if c.Lookup(a) || c.Lookup(b) {
		t.Fatal("entries not refreshed for a whole window must be gone after two rotations")
	}
	if !c.Lookup(r) {
		t.Fatal("refreshed entry lost")
	}
	// r keeps living as long as it is looked up once per window.
	for range 5 {
		c.Rotate()
		if !c.Lookup(r) {
			t.Fatal("entry refreshed every window was lost")
		}
	}
	c.Rotate()
	c.Rotate()
	if c.Lookup(r) {
		t.Fatal("entry must be gone two rotations after its last refresh")
	}
}

func ptr(idx [K]uint32) *[K]uint32 { return &idx }

func TestRotateClearsOnlyPassive(t *testing.T) {
	c := newTestCache(t)
	_ = c.Insert(cidN(7))
	before, _ := c.AppendTable(nil, 0)
	c.Rotate() // clears table 1 (empty), table 0 becomes PASSIVE
	after, _ := c.AppendTable(nil, 0)
	if !bytes.Equal(before, after) {
		t.Fatal("Rotate modified the ACTIVE table")
	}
	c.Rotate() // clears table 0
	cleared, _ := c.AppendTable(nil, 0)
	if !bytes.Equal(cleared, make([]byte, TableBytes)) {
		t.Fatal("Rotate did not clear the PASSIVE table")
	}
}

func TestWrongLengthCID(t *testing.T) {
	c := newTestCache(t)
	for _, cid := range [][]byte{nil, {}, make([]byte, 7), make([]byte, 9), make([]byte, 21)} {
		if err := c.Insert(cid); !errors.Is(err, ErrCIDLength) {
			t.Errorf("Insert(len %d) = %v, want ErrCIDLength", len(cid), err)
		}
		if c.Lookup(cid) {
			t.Errorf("Lookup(len %d) hit", len(cid))
		}
	}
	empty, _ := c.AppendTable(nil, 0)
	if !bytes.Equal(empty, make([]byte, TableBytes)) {
		t.Fatal("a rejected insert set bits")
	}
}

func TestConstructorErrors(t *testing.T) {
	good := [2][]uint64{make([]uint64, TableWords), make([]uint64, TableWords)}
	for _, n := range []int{-1, 0, MaxCIDLen + 1} {
		if _, err := New(refKey(), n); err == nil {
			t.Errorf("New(cidLen %d) accepted", n)
		}
	}
	if _, err := NewShared(refKey(), 8, [2][]uint64{good[0], make([]uint64, 3)}, new(uint64)); err == nil {
		t.Error("short table accepted")
	}
	if _, err := NewShared(refKey(), 8, good, nil); err == nil {
		t.Error("nil generation accepted")
	}
	for _, n := range []int{1, 8, MaxCIDLen} {
		c, err := New(refKey(), n)
		if err != nil {
			t.Fatalf("New(cidLen %d): %v", n, err)
		}
		cid := bytes.Repeat([]byte{0xab}, n)
		if err := c.Insert(cid); err != nil || !c.Lookup(cid) || c.CIDLen() != n {
			t.Errorf("cidLen %d: insert/lookup failed (%v)", n, err)
		}
	}
}

// TestSharedMemoryLayout checks the exported layout: bit b of the filter is
// bit b%64 of little-endian word b/64, and a cache over shared memory sees
// and drives the same words and generation.
func TestSharedMemoryLayout(t *testing.T) {
	tables := [2][]uint64{make([]uint64, TableWords), make([]uint64, TableWords)}
	gen := new(uint64)
	c, err := NewShared(refKey(), 8, tables, gen)
	if err != nil {
		t.Fatal(err)
	}
	cid := cidN(42)
	_ = c.Insert(cid)
	raw, err := c.AppendTable(nil, 0)
	if err != nil || len(raw) != TableBytes {
		t.Fatalf("AppendTable: %d bytes, %v", len(raw), err)
	}
	want := map[uint32]bool{}
	for _, b := range Indices(c.Hash(cid)) {
		want[b] = true
		if raw[b/8]&(1<<(b%8)) == 0 {
			t.Errorf("bit %d not at byte %d bit %d", b, b/8, b%8)
		}
		if tables[0][b/64]&(1<<(b%64)) == 0 {
			t.Errorf("bit %d not set in the shared words", b)
		}
	}
	set := 0
	for _, x := range raw {
		for ; x != 0; x &= x - 1 {
			set++
		}
	}
	if set != len(want) {
		t.Errorf("%d bits set, want %d", set, len(want))
	}
	c.Rotate()
	if *gen != 1 {
		t.Errorf("shared generation = %d after one rotation", *gen)
	}
	if _, err := c.Words(2); err == nil {
		t.Error("Words(2) accepted")
	}
	if _, err := c.AppendTable(nil, -1); err == nil {
		t.Error("AppendTable(-1) accepted")
	}
	w, _ := c.Words(1)
	if &w[0] != &tables[1][0] {
		t.Error("Words does not return the shared memory")
	}
}

func TestIndicesUint32Wrapping(t *testing.T) {
	// lo + 2*hi overflows 32 bits here; the normative reading wraps
	// (equivalently, computes in 64 bits) before taking mod 2^23.
	h := uint64(0xfffffff0)<<32 | 0xffffff00
	got := Indices(h)
	lo, hi := uint64(0xffffff00), uint64(0xfffffff0)
	for i := range K {
		if want := uint32((lo + uint64(i)*hi) % M); got[i] != want {
			t.Errorf("index %d = %d, want %d", i, got[i], want)
		}
	}
	if got != [K]uint32{0x7fff00, 0x7ffef0, 0x7ffee0} {
		t.Errorf("Indices = %#x", got)
	}
}

func TestDeriveKey(t *testing.T) {
	k1 := DeriveKey([]byte("root secret one"))
	k2 := DeriveKey([]byte("root secret two"))
	if k1 == k2 || k1 == (Key{}) {
		t.Fatal("derived keys must differ per root and be non-zero")
	}
	if DeriveKey([]byte("root secret one")) != k1 {
		t.Fatal("derivation is not deterministic")
	}
}

func TestRunRotation(t *testing.T) {
	c := newTestCache(t)
	if err := c.RunRotation(context.Background(), 0); err == nil {
		t.Fatal("zero period accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.RunRotation(ctx, time.Millisecond) }()
	// Wait (without a deadline assertion) until it has rotated twice.
	testutil.WaitFor(t, "the second rotation", func() bool { return c.Generation() >= 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("RunRotation returned %v", err)
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	c := newTestCache(t)
	cid := cidN(9)
	if n := testing.AllocsPerRun(100, func() { _ = c.Insert(cid); _ = c.Lookup(cid) }); n != 0 {
		t.Errorf("Insert+Lookup allocate %v times", n)
	}
}
