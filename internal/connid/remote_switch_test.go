package connid

import (
	"errors"
	"slices"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

func TestRemoteSwitchToUnused(t *testing.T) {
	r := newRemote(t, 4)
	if _, _, ok := r.NextUnused(); ok {
		t.Fatal("NextUnused found a spare ID before the peer issued one")
	}
	if err := r.SwitchTo(0); !errors.Is(err, ErrNoSpareID) {
		t.Fatalf("switching to the current ID: %v, want ErrNoSpareID", err)
	}
	for seq := byte(1); seq <= 3; seq++ {
		if err := r.HandleNewConnectionID(uint64(seq), 0, cidN(seq), tokN(seq)); err != nil {
			t.Fatal(err)
		}
	}
	cid, seq, ok := r.NextUnused()
	if !ok || seq != 1 || !cid.Equal(cidN(1)) {
		t.Fatalf("NextUnused = %v %d %v, want sequence 1", cid, seq, ok)
	}
	// Sequence 0's token does not reset us once we stop using it; 1's does.
	if err := r.SwitchTo(seq); err != nil {
		t.Fatal(err)
	}
	if !r.Current().Equal(cidN(1)) || r.CurrentSequence() != 1 || r.ActiveCount() != 3 {
		t.Fatalf("after the switch: current %v seq %d, %d active", r.Current(), r.CurrentSequence(), r.ActiveCount())
	}
	if got := popRetires(r); !slices.Equal(got, []uint64{0}) {
		t.Fatalf("RETIRE_CONNECTION_ID queued for %v, want [0]", got)
	}
	if !r.IsStatelessReset(resetFor(t, tokN(1))) {
		t.Error("the token of the ID now in use is not recognized")
	}
	// The next unused skips the used one; a retransmitted
	// NEW_CONNECTION_ID for the retired sequence 0 is ignored.
	if _, seq, ok := r.NextUnused(); !ok || seq != 2 {
		t.Fatalf("NextUnused after the switch = %d %v, want 2", seq, ok)
	}
	if _, seq, ok := r.NextUnusedExcept([]uint64{2}); !ok || seq != 3 {
		t.Fatalf("NextUnusedExcept(2) = %d %v, want 3", seq, ok)
	}
	if _, _, ok := r.NextUnusedExcept([]uint64{2, 3}); ok {
		t.Fatal("NextUnusedExcept returned a reserved ID")
	}
	if err := r.HandleNewConnectionID(3, 0, cidN(3), tokN(3)); err != nil {
		t.Fatal(err)
	}
	if err := r.SwitchTo(3); err != nil {
		t.Fatal(err)
	}
	if err := r.HandleNewConnectionID(1, 0, cidN(1), tokN(1)); err != nil {
		t.Fatal(err)
	}
	if r.ActiveCount() != 2 || r.find(1) >= 0 {
		t.Fatalf("a retransmitted frame brought retired sequence 1 back: %d active", r.ActiveCount())
	}
	if r.IsStatelessReset(resetFor(t, tokN(1))) {
		t.Error("a retired ID's token still resets us")
	}
	if err := r.SwitchTo(9); !errors.Is(err, ErrNoSpareID) {
		t.Fatalf("switching to an unknown sequence: %v", err)
	}
	// Retire Prior To covers the switched-away sequences: they are forgotten.
	if err := r.HandleNewConnectionID(5, 4, cidN(5), tokN(5)); err != nil {
		t.Fatal(err)
	}
	if len(r.switchedAway) != 0 {
		t.Errorf("switched-away sequences kept after Retire Prior To passed them: %v", r.switchedAway)
	}
}

func TestRemoteSwitchBounded(t *testing.T) {
	r := newRemote(t, 2)
	next := uint64(1)
	switches := 0
	for range 100 {
		if err := r.HandleNewConnectionID(next, 0, cidN(byte(next)), tokN(byte(next))); err != nil {
			t.Fatal(err)
		}
		if err := r.SwitchTo(next); err != nil {
			if !errors.Is(err, ErrNoSpareID) {
				t.Fatal(err)
			}
			break
		}
		switches++
		next++
		popRetires(r)
		for range r.inFlight {
			r.OnRetireAcked(0)
		}
	}
	if switches == 0 || switches > 2*r.limit {
		t.Fatalf("%d switches before refusal, want 1..%d", switches, 2*r.limit)
	}
}

func TestRemoteSwitchZeroLength(t *testing.T) {
	r, err := NewRemoteCIDs(protocol.ConnectionIDFromBytes(nil), RemoteConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.NextUnused(); ok {
		t.Fatal("a zero-length peer has no spare IDs")
	}
}
