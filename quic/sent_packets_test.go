package quic

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSentPacketsMatchesMap drives the ring and a map with the same
// random sends (with handles skipped, as for packets that elicit no ACK),
// acknowledgements and losses out of order, and checks that they agree.
func TestSentPacketsMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ring sentPackets
	want := make(map[uint64]*sentPacket)
	handle := uint64(0)
	check := func(step int) {
		t.Helper()
		if ring.len() != len(want) {
			t.Fatalf("step %d: %d held, want %d", step, ring.len(), len(want))
		}
		var got []uint64
		for h, p := range ring.all() {
			if want[h] != p {
				t.Fatalf("step %d: handle %d is %p, want %p", step, h, p, want[h])
			}
			got = append(got, h)
		}
		if keys := slices.Sorted(maps.Keys(want)); !slices.Equal(got, keys) {
			t.Fatalf("step %d: handles %v, want %v", step, got, keys)
		}
	}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 && len(want) < 3000: // send, sometimes skipping handles
			handle += 1 + uint64(rng.IntN(3)/2)
			p := &sentPacket{}
			ring.add(handle, p)
			want[handle] = p
		case r < 8 && len(want) > 0: // the oldest leave first, mostly
			h := slices.Min(slices.Collect(maps.Keys(want)))
			if rng.IntN(4) == 0 {
				h += uint64(rng.IntN(40))
			}
			if got := ring.remove(h); got != want[h] {
				t.Fatalf("step %d: remove(%d) = %p, want %p", step, h, got, want[h])
			}
			delete(want, h)
		default: // any, or one never held
			h := handle - uint64(rng.IntN(int(handle)+1)) + uint64(rng.IntN(2))
			if got := ring.get(h); got != want[h] {
				t.Fatalf("step %d: get(%d) = %p, want %p", step, h, got, want[h])
			}
			if got := ring.remove(h); got != want[h] {
				t.Fatalf("step %d: remove(%d) = %p, want %p", step, h, got, want[h])
			}
			delete(want, h)
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
	// An older handle than any held widens the span backwards.
	ring.clear()
	clear(want)
	for _, h := range []uint64{100, 40, 101, 7} {
		p := &sentPacket{}
		ring.add(h, p)
		want[h] = p
	}
	check(-2)
	for h := range want {
		ring.remove(h)
	}
	ring.releaseIfEmpty()
	if ring.ring != nil || ring.get(100) != nil {
		t.Errorf("an empty ring kept %d slots", len(ring.ring))
	}
}

// TestSentPacketsNoAllocations: once the ring spans the window in flight,
// sending and acknowledging allocate nothing.
func TestSentPacketsNoAllocations(t *testing.T) {
	var ring sentPackets
	p := &sentPacket{}
	handle := uint64(0)
	window := func() {
		for range 1000 {
			handle++
			ring.add(handle, p)
		}
		for h := handle - 999; h <= handle; h++ {
			ring.remove(h)
		}
	}
	window()
	if n := testing.AllocsPerRun(10, window); n != 0 {
		t.Errorf("%v allocations per window of 1000 packets", n)
	}
}
