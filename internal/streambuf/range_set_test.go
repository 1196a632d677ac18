package streambuf

import (
	"math/rand/v2"
	"testing"
)

// checkRangeSet compares r with a bitmap model and checks the set's own
// invariants: sorted, non-empty, neither overlapping nor touching.
func checkRangeSet(t *testing.T, r *rangeSet, model []bool) {
	t.Helper()
	for i, sp := range r.s {
		if sp.start >= sp.end {
			t.Fatalf("empty span %v", sp)
		}
		if i > 0 && r.s[i-1].end >= sp.start {
			t.Fatalf("spans %v and %v overlap or touch", r.s[i-1], sp)
		}
	}
	got := make([]bool, len(model))
	for _, sp := range r.s {
		for o := sp.start; o < sp.end; o++ {
			got[o] = true
		}
	}
	for o := range model {
		if got[o] != model[o] {
			t.Fatalf("offset %d: set has %v, model %v (spans %v)", o, got[o], model[o], r.s)
		}
	}
}

func TestRangeSetRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 200
	var r rangeSet
	model := make([]bool, size)
	for range 5000 {
		s := rng.Uint64N(size)
		e := min(size, s+rng.Uint64N(20))
		switch rng.IntN(3) {
		case 0, 1:
			want := r.countAfterAdd(s, e)
			r.add(s, e)
			if r.len() != want {
				t.Fatalf("countAfterAdd(%d,%d) = %d, len after add %d", s, e, want, r.len())
			}
			for o := s; o < e; o++ {
				model[o] = true
			}
		case 2:
			r.remove(s, e)
			for o := s; o < e; o++ {
				model[o] = false
			}
		}
		checkRangeSet(t, &r, model)
		// firstGap must return the first uncovered offset of [s, e).
		gs, ge, ok := r.firstGap(s, e)
		wantStart := e
		for o := s; o < e; o++ {
			if !model[o] {
				wantStart = o
				break
			}
		}
		if ok != (wantStart < e) || ok && gs != wantStart {
			t.Fatalf("firstGap(%d,%d) = %d,%d,%v; want start %d", s, e, gs, ge, ok, wantStart)
		}
		for o := gs; ok && o < ge; o++ {
			if model[o] {
				t.Fatalf("firstGap(%d,%d) = [%d,%d) covers received offset %d", s, e, gs, ge, o)
			}
		}
		if ok && ge < e && !model[ge] {
			t.Fatalf("firstGap(%d,%d) = [%d,%d) stops early", s, e, gs, ge)
		}
	}
}

func TestRangeSetCoarsening(t *testing.T) {
	var r rangeSet
	r.add(0, 10)
	r.add(12, 13)  // gap 2 before
	r.add(20, 21)  // gap 7
	r.add(22, 100) // gap 1
	if i := r.smallestSpan(); r.s[i] != (span{12, 13}) && r.s[i] != (span{20, 21}) {
		t.Fatalf("smallestSpan = %v", r.s[i])
	}
	r.mergeClosest()
	want := []span{{0, 10}, {12, 13}, {20, 100}}
	if len(r.s) != len(want) {
		t.Fatalf("after mergeClosest: %v, want %v", r.s, want)
	}
	for i := range want {
		if r.s[i] != want[i] {
			t.Fatalf("after mergeClosest: %v, want %v", r.s, want)
		}
	}
}

func TestRangeSetNoAllocs(t *testing.T) {
	var r rangeSet
	r.s = make([]span, 0, 8)
	allocs := testing.AllocsPerRun(100, func() {
		r.add(10, 20)
		r.add(30, 40)
		r.add(0, 5)
		r.remove(12, 14)
		r.remove(0, 100)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per run, want 0", allocs)
	}
}
