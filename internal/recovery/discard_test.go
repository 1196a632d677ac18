package recovery

import (
	"errors"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

func TestDiscardInitialAndHandshake(t *testing.T) {
	r := New(Config{})
	send(t, r, protocol.SpaceInitial, 0, t0)
	send(t, r, protocol.SpaceInitial, 1, t0)
	send(t, r, protocol.SpaceHandshake, 0, t0.Add(ms(5)))
	fire(t, r, t0.Add(ms(999)))
	if r.BytesInFlight() != 3*1200 || r.PTOCount() != 1 {
		t.Fatalf("in flight %d, pto_count %d", r.BytesInFlight(), r.PTOCount())
	}
	cwnd := r.Controller().CongestionWindow()

	now := t0.Add(ms(1000))
	if err := r.DiscardSpace(protocol.SpaceInitial, now); err != nil {
		t.Fatal(err)
	}
	// Discarded packets are neither acked nor lost for the controller.
	if r.BytesInFlight() != 1200 || r.PTOCount() != 0 || r.Controller().CongestionWindow() != cwnd {
		t.Fatalf("in flight %d, pto_count %d, cwnd %d", r.BytesInFlight(), r.PTOCount(), r.Controller().CongestionWindow())
	}
	// The timer now serves the Handshake space, without backoff.
	expectTimer(t, r, t0.Add(ms(5+999)))
	if err := r.OnPacketSent(protocol.SpaceInitial, SentPacket{Number: 2, TimeSent: now}); !errors.Is(err, ErrSpaceDiscarded) {
		t.Fatalf("send after discard: %v", err)
	}
	if err := r.OnAckReceived(protocol.SpaceInitial, []wire.AckRange{rng(0, 1)}, 0, now, nil); !errors.Is(err, ErrSpaceDiscarded) {
		t.Fatalf("ACK after discard: %v", err)
	}
	if err := r.DiscardSpace(protocol.SpaceInitial, now); err != nil {
		t.Fatalf("discarding twice: %v", err)
	}

	if err := r.DiscardSpace(protocol.SpaceHandshake, now); err != nil {
		t.Fatal(err)
	}
	if r.BytesInFlight() != 0 {
		t.Fatalf("in flight %d", r.BytesInFlight())
	}
	if err := r.DiscardSpace(protocol.SpaceAppData, now); !errors.Is(err, ErrCannotDiscardApplicationData) {
		t.Fatalf("discarding ApplicationData: %v", err)
	}
	if err := r.DiscardSpace(protocol.NumSpaces, now); !errors.Is(err, ErrInvalidSpace) {
		t.Fatalf("invalid space: %v", err)
	}
}

func TestDiscardClearsLossTimer(t *testing.T) {
	r := New(Config{IsServer: true})
	send(t, r, protocol.SpaceInitial, 0, t0)
	send(t, r, protocol.SpaceInitial, 1, t0.Add(ms(1)))
	ack(t, r, protocol.SpaceInitial, t0.Add(ms(50)), 0, rng(1, 1))
	if r.spaces[protocol.SpaceInitial].lossTime.IsZero() {
		t.Fatal("expected a loss time for packet 0")
	}
	if err := r.DiscardSpace(protocol.SpaceInitial, t0.Add(ms(51))); err != nil {
		t.Fatal(err)
	}
	expectTimer(t, r, time.Time{})
}
