package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	r := confirmedServer()
	var ev Events
	ranges := make([]wire.AckRange, 1)
	now := t0
	var pn uint64
	step := func() {
		now = now.Add(10 * time.Microsecond)
		if err := r.OnPacketSent(protocol.SpaceAppData, SentPacket{Number: pn, TimeSent: now, Size: 1200, AckEliciting: true, InFlight: true}); err != nil {
			t.Fatal(err)
		}
		if pn >= 20 {
			ranges[0] = wire.AckRange{Smallest: pn - 20, Largest: pn - 20}
			ev.Reset()
			if err := r.OnAckReceived(protocol.SpaceAppData, ranges, 0, now, &ev); err != nil {
				t.Fatal(err)
			}
			r.OnLossDetectionTimeout(now, &ev)
			_ = r.LossDetectionTimeout()
		}
		pn++
	}
	for range 1000 { // let the ring and the event slices reach their size
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("%v allocations per packet in steady state", n)
	}
}
