package recovery

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// TestReleaseIdle: an idle connection's empty rings are given back, and
// what must outlive them stays: the next packets are tracked as before,
// and an ACK of a number skipped before the release is still refused.
func TestReleaseIdle(t *testing.T) {
	r := New(Config{})
	send(t, r, protocol.SpaceAppData, 0, t0)
	send(t, r, protocol.SpaceAppData, 2, t0) // 1 skipped
	r.ReleaseIdle()
	if r.spaces[protocol.SpaceAppData].sent.buf == nil {
		t.Fatal("released the ring of a space with packets in flight")
	}
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(20)), 0, rng(2, 2), rng(0, 0))
	r.ReleaseIdle()
	for sp := range r.spaces {
		if q := &r.spaces[sp].sent; q.buf != nil {
			t.Fatalf("space %d kept a ring of %d with nothing in it", sp, len(q.buf))
		}
	}
	if err := r.OnAckReceived(protocol.SpaceAppData, []wire.AckRange{rng(1, 2)}, 0, t0.Add(ms(30)), nil); !errors.Is(err, ErrUnsentPacketAcked) {
		t.Fatalf("ACK of the skipped number after the release: %v", err)
	}
	send(t, r, protocol.SpaceAppData, 3, t0.Add(ms(40)))
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(60)), 0, rng(3, 3))
	if r.BytesInFlight() != 0 {
		t.Fatalf("%d bytes in flight after everything was acknowledged", r.BytesInFlight())
	}
}
