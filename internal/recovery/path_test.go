package recovery

import (
	"testing"

	"github.com/turboretry/turboretry/internal/congestion"
)

func TestOnPathChangedRestartsEstimates(t *testing.T) {
	r := confirmedServer()
	r.SetMaxAckDelay(ms(7))
	for pn := uint64(0); pn < 20; pn++ {
		send(t, r, ApplicationData, pn, t0.Add(ms(int(pn))))
	}
	ack(t, r, ApplicationData, t0.Add(ms(40)), 0, rng(0, 19))
	if r.RTT().SmoothedRTT() == DefaultInitialRTT {
		t.Fatal("no RTT sample taken")
	}
	grown := r.Controller().CongestionWindow()
	if grown <= congestion.InitialWindow(congestion.DefaultMaxDatagramSize) {
		t.Fatalf("slow start did not grow the window: %d", grown)
	}
	send(t, r, ApplicationData, 20, t0.Add(ms(50)))
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
	ev := ack(t, r, ApplicationData, t0.Add(ms(60)), 0, rng(0, 20))
	if !equalNumbers(ev.Acked, 20) || r.BytesInFlight() != 0 {
		t.Errorf("acknowledging after the change: acked %v, %d in flight", numbers(ev.Acked), r.BytesInFlight())
	}
}
