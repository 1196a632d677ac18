package recovery

import (
	"testing"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/protocol"
)

func TestOnPathChangedRestartsEstimates(t *testing.T) {
	r := confirmedServer()
	r.SetMaxAckDelay(ms(7))
	for pn := uint64(0); pn < 20; pn++ {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(int(pn))))
	}
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(40)), 0, rng(0, 19))
	if r.RTT().SmoothedRTT() == DefaultInitialRTT {
		t.Fatal("no RTT sample taken")
	}
	grown := r.Controller().CongestionWindow()
	if grown <= congestion.InitialWindow(congestion.DefaultMaxDatagramSize) {
		t.Fatalf("slow start did not grow the window: %d", grown)
	}
	send(t, r, protocol.SpaceAppData, 20, t0.Add(ms(50)))
	r.OnPathChanged(t0.Add(ms(51)))
	if got := r.RTT().SmoothedRTT(); got != DefaultInitialRTT {
		t.Errorf("smoothed RTT after the path change = %v, want %v", got, DefaultInitialRTT)
	}
	if got := r.RTT().MaxAckDelay(); got != ms(7) {
		t.Errorf("the peer's max_ack_delay was lost: %v", got)
	}
	if got := r.Controller().CongestionWindow(); got != congestion.InitialWindow(congestion.DefaultMaxDatagramSize) {
		t.Errorf("congestion window after the path change = %d, want the initial one", got)
	}
	if r.BytesInFlight() != 1200 {
		t.Errorf("the packet in flight was forgotten: %d bytes", r.BytesInFlight())
	}
	// The packet sent on the old path is still acknowledged normally.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(60)), 0, rng(0, 20))
	if !equalNumbers(ev.Acked, 20) || r.BytesInFlight() != 0 {
		t.Errorf("acknowledging after the change: acked %v, %d in flight", numbers(ev.Acked), r.BytesInFlight())
	}
}

func TestMTUProbeLossIsNoCongestionSignal(t *testing.T) {
	r := confirmedServer()
	cwnd := r.Controller().CongestionWindow()
	probe := SentPacket{Number: 0, TimeSent: t0, Size: 1452, AckEliciting: true, InFlight: true, MTUProbe: true}
	if err := r.OnPacketSent(protocol.SpaceAppData, probe); err != nil {
		t.Fatal(err)
	}
	for pn := uint64(1); pn <= 4; pn++ {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(int(pn))))
	}
	// Packets 1-4 acknowledged: the probe falls behind the packet threshold.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(30)), 0, rng(1, 4))
	if !equalNumbers(ev.Lost, 0) {
		t.Fatalf("lost %v, want the probe", numbers(ev.Lost))
	}
	if got := r.Controller().CongestionWindow(); got < cwnd {
		t.Errorf("the lost probe shrank the congestion window from %d to %d", cwnd, got)
	}
	if r.BytesInFlight() != 0 {
		t.Errorf("the lost probe stays in flight: %d bytes", r.BytesInFlight())
	}
}
