package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/protocol"
)

func TestLossByPacketThresholdThenTimeThreshold(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(6) {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(int(pn))))
	}
	// First sample: latest = 50 - 5 = 45 ms, so the loss delay is
	// 9/8 * 45 = 50.625 ms: nothing is old enough for the time threshold.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(50)), 0, rng(5, 5))
	if !equalNumbers(ev.Acked, 5) || !equalNumbers(ev.Lost, 0, 1, 2) {
		t.Fatalf("acked %v lost %v; want 5 and 0 1 2", numbers(ev.Acked), numbers(ev.Lost))
	}
	if r.BytesInFlight() != 2*1200 {
		t.Fatalf("bytes in flight %d", r.BytesInFlight())
	}
	// Packet 3 is one short of the packet threshold; the timer waits for
	// its time threshold: sent at 3 ms + 50.625 ms.
	want := t0.Add(ms(3) + 50625*time.Microsecond)
	if got := r.LossDetectionTimeout(); !got.Equal(want) {
		t.Fatalf("timer %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	ev = Events{}
	if a := r.OnLossDetectionTimeout(want.Add(-time.Nanosecond), &ev); a.Kind != TimeoutNone || len(ev.Lost) != 0 {
		t.Fatalf("early timeout acted: %+v", a)
	}
	a := r.OnLossDetectionTimeout(want, &ev)
	if a.Kind != TimeoutLoss || a.Space != protocol.SpaceAppData || !equalNumbers(ev.Lost, 3) {
		t.Fatalf("timeout %+v lost %v; want loss of 3", a, numbers(ev.Lost))
	}
	// Packet 4 goes next, 1 ms later.
	if got := r.LossDetectionTimeout(); !got.Equal(want.Add(ms(1))) {
		t.Fatalf("timer %v after first loss timeout", got.Sub(t0))
	}
	ev = Events{}
	r.OnLossDetectionTimeout(want.Add(ms(1)), &ev)
	if !equalNumbers(ev.Lost, 4) || r.BytesInFlight() != 0 {
		t.Fatalf("lost %v, in flight %d", numbers(ev.Lost), r.BytesInFlight())
	}
	// Nothing left in flight: a server disarms the timer.
	if !r.LossDetectionTimeout().IsZero() {
		t.Fatalf("timer still armed at %v", r.LossDetectionTimeout().Sub(t0))
	}
}

func TestLossByTimeThresholdOnAck(t *testing.T) {
	r := confirmedServer()
	send(t, r, protocol.SpaceAppData, 0, t0)
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(100)), 0, rng(0, 0)) // srtt 100
	send(t, r, protocol.SpaceAppData, 1, t0.Add(ms(100)))
	send(t, r, protocol.SpaceAppData, 2, t0.Add(ms(250)))
	// Packet 2 acked at 350: packet 1 was sent 250 ms ago, more than
	// 9/8 * max(100, latest 100) = 112.5 ms, though it is only one below.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(350)), 0, rng(2, 2))
	if !equalNumbers(ev.Lost, 1) {
		t.Fatalf("lost %v, want 1", numbers(ev.Lost))
	}
	// The ACK of 0 came while application limited (1200 bytes in
	// flight), so the initial window was halved.
	if got := r.Controller().CongestionWindow(); got != initialCwnd/2 {
		t.Fatalf("cwnd %d, want %d", got, initialCwnd/2)
	}
}

func TestReorderingWithinThresholdsIsNotLoss(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(4) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	// Packet 1 is only one below the largest acknowledged, short of
	// kPacketThreshold.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(20)), 0, rng(2, 2), rng(0, 0))
	if len(ev.Lost) != 0 {
		t.Fatalf("reordering declared %v lost", numbers(ev.Lost))
	}
	// The late packet arrives before its time threshold.
	ev = ack(t, r, protocol.SpaceAppData, t0.Add(ms(21)), 0, rng(0, 3))
	if !equalNumbers(ev.Acked, 1, 3) || len(ev.Lost) != 0 {
		t.Fatalf("acked %v lost %v", numbers(ev.Acked), numbers(ev.Lost))
	}
	if r.Controller().InRecovery() {
		t.Fatal("reordering entered recovery")
	}
}

// persistentScenario sends packet 0 and takes a 100 ms RTT sample from
// it (so the persistent congestion duration is (100+200+25)*3 = 975 ms),
// then sends packets 1..8 every gap starting 1 s later, and packet 9 after
// them, and returns the ACK time for packet 9.
func persistentScenario(t *testing.T, r *Recovery, gap time.Duration, sampleFirst bool) time.Time {
	if sampleFirst {
		send(t, r, protocol.SpaceAppData, 0, t0)
		ack(t, r, protocol.SpaceAppData, t0.Add(ms(100)), 0, rng(0, 0))
	}
	at := t0.Add(time.Second)
	for pn := uint64(1); pn <= 9; pn++ {
		send(t, r, protocol.SpaceAppData, pn, at)
		at = at.Add(gap)
	}
	return at.Add(-gap + ms(100))
}

func TestPersistentCongestion(t *testing.T) {
	// After the collapse to the minimum window, the ACK of packet 9 (sent
	// before, but the recovery period was reset) adds one datagram in slow
	// start, as in RFC 9002 appendix B.
	minWindow := congestion.MinimumWindow(1200) + 1200

	// 1..8 lost, spanning 7*200 = 1400 ms > 975 ms: persistent.
	r := confirmedServer()
	now := persistentScenario(t, r, ms(200), true)
	ev := ack(t, r, protocol.SpaceAppData, now, 0, rng(9, 9))
	if len(ev.Lost) != 8 {
		t.Fatalf("lost %v", numbers(ev.Lost))
	}
	if got := r.Controller().CongestionWindow(); got != minWindow {
		t.Fatalf("cwnd %d, want the minimum %d", got, minWindow)
	}
	if r.Controller().InRecovery() {
		t.Fatal("persistent congestion must leave recovery")
	}

	// Spanning 7*100 = 700 ms < 975 ms: an ordinary loss.
	r = confirmedServer()
	now = persistentScenario(t, r, ms(100), true)
	ack(t, r, protocol.SpaceAppData, now, 0, rng(9, 9))
	if got := r.Controller().CongestionWindow(); got != initialCwnd/2 {
		t.Fatalf("cwnd %d, want %d", got, initialCwnd/2)
	}

	// Packet 5 acknowledged: the runs 1..4 and 6..8 are each shorter.
	r = confirmedServer()
	now = persistentScenario(t, r, ms(200), true)
	ev = ack(t, r, protocol.SpaceAppData, now, 0, rng(9, 9), rng(5, 5))
	if len(ev.Lost) != 7 {
		t.Fatalf("lost %v", numbers(ev.Lost))
	}
	// An ordinary loss halves the initial window (the ACK of 0 was
	// application limited; 5 and 9 were sent before the recovery period).
	if got := r.Controller().CongestionWindow(); got != initialCwnd/2 {
		t.Fatalf("persistent congestion across an acknowledged packet: cwnd %d, want %d", got, initialCwnd/2)
	}

	// No RTT sample before the packets were sent: not persistent.
	r = confirmedServer()
	now = persistentScenario(t, r, ms(200), false)
	ev = ack(t, r, protocol.SpaceAppData, now, 0, rng(9, 9))
	if len(ev.Lost) != 8 {
		t.Fatalf("lost %v", numbers(ev.Lost))
	}
	if got := r.Controller().CongestionWindow(); got != initialCwnd/2 {
		t.Fatalf("persistent congestion without a prior RTT sample: cwnd %d, want %d", got, initialCwnd/2)
	}
}
