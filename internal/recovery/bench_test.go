package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// benchSendAck sends one packet and acknowledges the one sent window
// packets earlier per iteration; every lossEvery-th packet is never
// acknowledged (0: none), so the packet threshold declares it lost.
func benchSendAck(b *testing.B, window uint64, lossEvery uint64) {
	r := confirmedServer()
	var ev Events
	ranges := make([]wire.AckRange, 2)
	now := t0
	var pn uint64
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Microsecond)
		err := r.OnPacketSent(protocol.SpaceAppData, SentPacket{Number: pn, TimeSent: now, Size: 1200, AckEliciting: true, InFlight: true, Handle: pn})
		if err != nil {
			b.Fatal(err)
		}
		if pn >= window {
			acked := pn - window
			frame := ranges[:1]
			frame[0] = wire.AckRange{Smallest: acked, Largest: acked}
			if lossEvery > 0 && acked%lossEvery == 0 {
				frame = ranges[:0] // this one is never acknowledged
			}
			if len(frame) > 0 {
				ev.Reset()
				if err := r.OnAckReceived(protocol.SpaceAppData, frame, 0, now, &ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		pn++
	}
}

func BenchmarkSendAckSteadyState(b *testing.B) { benchSendAck(b, 10, 0) }

func BenchmarkSendAckWithLoss(b *testing.B) { benchSendAck(b, 10, 50) }

func BenchmarkSendAckLargeWindow(b *testing.B) { benchSendAck(b, 1000, 0) }
