package ackgen

import (
	"errors"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// FuzzTracker drives a Tracker with an arbitrary sequence of receptions and
// acknowledgements and checks it against a plain set of packet numbers.
// Each operation is two bytes: an opcode and a packet number.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 2, 3, 0})
	f.Add([]byte{0, 5, 0, 3, 1, 4, 0, 9, 0, 7, 0, 11, 0, 13, 2, 6})
	f.Add([]byte{0, 1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11, 0, 2, 0, 0})
	f.Add([]byte{0, 10, 2, 10, 0, 10, 0, 11, 4, 255, 0, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tr := NewTracker(protocol.SpaceAppData, Config{MaxRanges: 4})
		seen := map[uint64]bool{}
		now := time.Unix(0, 0)
		buf := make([]wire.AckRange, 0, 4)
		for i := 0; i+1 < len(ops); i += 2 {
			op, pn := ops[i]%5, uint64(ops[i+1])
			now = now.Add(time.Millisecond)
			switch op {
			case 0, 1:
				wantDup := seen[pn] || pn < tr.set.floor
				if got := tr.IsDuplicate(pn); got != wantDup {
					t.Fatalf("IsDuplicate(%d) = %v, want %v", pn, got, wantDup)
				}
				err := tr.Received(pn, op == 0, protocol.ECN(pn%4), now)
				if wantDup != errors.Is(err, ErrDuplicate) {
					t.Fatalf("Received(%d) = %v, duplicate %v", pn, err, wantDup)
				}
				seen[pn] = true
			case 2:
				tr.OnAckAcknowledged(pn)
			case 3:
				tr.OnAckSent()
			case 4:
				if _, ok := tr.BuildAck(buf, now); ok {
					tr.OnAckSent()
				}
			}
			checkInvariants(t, tr, seen)
		}
	})
}

func checkInvariants(t *testing.T, tr *Tracker, seen map[uint64]bool) {
	t.Helper()
	r := tr.set.r
	if len(r) > tr.cfg.MaxRanges {
		t.Fatalf("%d ranges, limit %d", len(r), tr.cfg.MaxRanges)
	}
	for i, x := range r {
		if x.Smallest > x.Largest || x.Smallest < tr.set.floor {
			t.Fatalf("bad range %v (floor %d)", x, tr.set.floor)
		}
		if i > 0 && x.Largest+1 >= r[i-1].Smallest {
			t.Fatalf("ranges not descending and disjoint: %v", r)
		}
		for pn := x.Smallest; pn <= x.Largest; pn++ {
			if !seen[pn] {
				t.Fatalf("range %v acknowledges unreceived %d", x, pn)
			}
		}
	}
	if len(r) > 0 && r[0].Largest != tr.largest {
		t.Fatalf("largest range %v, largest received %d", r[0], tr.largest)
	}
	for pn := range seen {
		if !tr.IsDuplicate(pn) {
			t.Fatalf("received %d not reported as duplicate", pn)
		}
		if pn >= tr.set.floor && !inRanges(r, pn) {
			t.Fatalf("received %d above floor %d missing from %v", pn, tr.set.floor, r)
		}
	}
}

func inRanges(r []wire.AckRange, pn uint64) bool {
	for _, x := range r {
		if pn >= x.Smallest && pn <= x.Largest {
			return true
		}
	}
	return false
}
