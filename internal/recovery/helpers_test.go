package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// send records an ack-eliciting, in-flight 1200-byte packet whose handle
// is its packet number.
func send(t *testing.T, r *Recovery, space protocol.PacketNumberSpace, pn uint64, at time.Time) {
	t.Helper()
	p := SentPacket{Number: pn, TimeSent: at, Size: 1200, AckEliciting: true, InFlight: true, Handle: pn}
	if err := r.OnPacketSent(space, p); err != nil {
		t.Fatalf("OnPacketSent(%v, %d): %v", space, pn, err)
	}
}

// ack processes an ACK frame and fails the test on error.
func ack(t *testing.T, r *Recovery, space protocol.PacketNumberSpace, now time.Time, delay time.Duration, ranges ...wire.AckRange) Events {
	t.Helper()
	var ev Events
	if err := r.OnAckReceived(space, ranges, delay, now, &ev); err != nil {
		t.Fatalf("OnAckReceived(%v, %v): %v", space, ranges, err)
	}
	return ev
}

func rng(smallest, largest uint64) wire.AckRange {
	return wire.AckRange{Smallest: smallest, Largest: largest}
}

func numbers(ps []SentPacket) []uint64 {
	out := make([]uint64, len(ps))
	for i, p := range ps {
		out[i] = p.Number
	}
	return out
}

func equalNumbers(ps []SentPacket, want ...uint64) bool {
	got := numbers(ps)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// confirmedServer returns a server past the handshake, where only the
// ApplicationData space matters.
func confirmedServer() *Recovery {
	r := New(Config{IsServer: true})
	r.SetHandshakeConfirmed(t0)
	return r
}
