package recovery

import (
	"errors"
	"testing"
	"time"

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

// TestReleaseIdleForgetsAckOnly: the ACK-only packets an idle connection
// sent last are never acknowledged (nothing ack-eliciting follows them),
// so they do not keep the ring: it is released while they are
// outstanding, a late ACK of them acknowledges nothing and is no error,
// and the packets sent after are tracked as before. An ack-eliciting
// packet still outstanding keeps it.
func TestReleaseIdleForgetsAckOnly(t *testing.T) {
	r := confirmedServer()
	app := protocol.SpaceAppData
	sendAckOnly := func(pn uint64, at time.Time) {
		t.Helper()
		if err := r.OnPacketSent(app, SentPacket{Number: pn, TimeSent: at, Size: 40, Handle: pn}); err != nil {
			t.Fatal(err)
		}
	}
	send(t, r, app, 0, t0)
	sendAckOnly(1, t0.Add(ms(1)))
	r.ReleaseIdle()
	if r.spaces[app].sent.buf == nil {
		t.Fatal("released the ring while an ack-eliciting packet is outstanding")
	}
	ack(t, r, app, t0.Add(ms(20)), 0, rng(0, 0))
	sendAckOnly(2, t0.Add(ms(21)))
	r.ReleaseIdle()
	if q := &r.spaces[app].sent; q.buf != nil {
		t.Fatalf("kept a ring of %d for %d ACK-only packets", len(q.buf), q.n)
	}
	if ev := ack(t, r, app, t0.Add(ms(40)), 0, rng(1, 2)); len(ev.Acked) != 0 || len(ev.Lost) != 0 {
		t.Fatalf("a late ACK of forgotten packets reported acked %v, lost %v", numbers(ev.Acked), numbers(ev.Lost))
	}
	send(t, r, app, 3, t0.Add(ms(50)))
	if ev := ack(t, r, app, t0.Add(ms(70)), 0, rng(0, 3)); !equalNumbers(ev.Acked, 3) {
		t.Fatalf("acked %v, want [3]", numbers(ev.Acked))
	}
	if r.BytesInFlight() != 0 || !r.LossDetectionTimeout().IsZero() {
		t.Fatalf("%d bytes in flight, timer %v after everything was acknowledged", r.BytesInFlight(), r.LossDetectionTimeout())
	}
}
