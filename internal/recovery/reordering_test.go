package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// loseTwoOfSix sends packets 0-5 at t0 and acknowledges 2-5 at 40 ms:
// the packet threshold declares 0 and 1 lost and the window halves.
func loseTwoOfSix(t *testing.T) *Recovery {
	t.Helper()
	r := confirmedServer()
	for pn := range uint64(6) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(40)), 0, rng(2, 5))
	if !equalNumbers(ev.Lost, 0, 1) || r.Controller().CongestionWindow() != initialCwnd/2 {
		t.Fatalf("lost %v, cwnd %d; want 0 1 and %d", numbers(ev.Lost), r.Controller().CongestionWindow(), initialCwnd/2)
	}
	return r
}

func TestSpuriousLossAdaptsThresholdsAndUndoes(t *testing.T) {
	r := loseTwoOfSix(t)
	if st := r.Reordering(); st != (ReorderingStats{PacketThreshold: 3, TimeThreshold: 9.0 / 8}) {
		t.Fatalf("before: %+v", st)
	}
	// The reordered packets arrive after all, in an ACK that newly
	// acknowledges nothing else.
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(45)), 0, rng(0, 5))
	if len(ev.Acked)+len(ev.Lost) != 0 {
		t.Fatalf("events for an ACK of lost packets: acked %v lost %v", numbers(ev.Acked), numbers(ev.Lost))
	}
	// Packet 0 was 5 below the largest acknowledged: threshold 6. It was
	// acknowledged 45 ms after it was sent, on a 40 ms RTT: 10/8 is the
	// smallest multiplier that would have waited for it.
	want := ReorderingStats{SpuriousLosses: 2, Undos: 1, PacketThreshold: 6, TimeThreshold: 10.0 / 8}
	if st := r.Reordering(); st != want {
		t.Fatalf("after: %+v, want %+v", st, want)
	}
	if cwnd := r.Controller().CongestionWindow(); cwnd != initialCwnd {
		t.Fatalf("cwnd %d after every loss proved spurious, want %d", cwnd, initialCwnd)
	}
	// A second report of the same packets changes nothing.
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(46)), 0, rng(0, 5))
	if st := r.Reordering(); st != want {
		t.Fatalf("repeated ACK: %+v", st)
	}

	// The new packet threshold: 6 below the largest is lost, 5 below not.
	for pn := uint64(6); pn <= 12; pn++ {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(50)))
	}
	ev = ack(t, r, protocol.SpaceAppData, t0.Add(ms(90)), 0, rng(8, 12))
	if !equalNumbers(ev.Lost, 6) {
		t.Fatalf("lost %v, want 6 alone", numbers(ev.Lost))
	}
	// The new time threshold arms the timer for 7 at 10/8 of 40 ms.
	if got, want := r.LossDetectionTimeout(), t0.Add(ms(50+50)); !got.Equal(want) {
		t.Fatalf("loss timer at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
}

func TestSpuriousLossPartlyRealKeepsReduction(t *testing.T) {
	r := loseTwoOfSix(t)
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(45)), 0, rng(1, 5)) // 0 really was lost
	if st := r.Reordering(); st.SpuriousLosses != 1 || st.Undos != 0 {
		t.Fatalf("stats %+v", st)
	}
	if cwnd := r.Controller().CongestionWindow(); cwnd != initialCwnd/2 {
		t.Fatalf("cwnd %d: a reduction with a real loss behind it was undone", cwnd)
	}
}

func TestSpuriousLossThresholdCaps(t *testing.T) {
	r := confirmedServer()
	send(t, r, protocol.SpaceAppData, 0, t0)
	for pn := uint64(1); pn <= 2000; pn++ {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(1)))
	}
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(41)), 0, rng(1, 2000))  // 0 lost, RTT 40 ms
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(300)), 0, rng(0, 2000)) // 7.5 RTTs, inside the history
	st := r.Reordering()
	if st.SpuriousLosses != 1 || st.PacketThreshold != maxPacketThreshold || st.TimeThreshold != 2 {
		t.Fatalf("stats %+v; want 1 spurious loss, thresholds %d and 2", st, maxPacketThreshold)
	}
}

func TestLostHistoryBoundedByCount(t *testing.T) {
	r := confirmedServer()
	const lost = lostHistoryLen + 10
	for pn := range uint64(lost) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	for pn := uint64(lost); pn < lost+3; pn++ {
		send(t, r, protocol.SpaceAppData, pn, t0.Add(ms(1)))
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(41)), 0, rng(lost, lost+2))
	if len(ev.Lost) != lost {
		t.Fatalf("%d lost, want %d", len(ev.Lost), lost)
	}
	if n := r.reorder.lost.n; n != lostHistoryLen {
		t.Fatalf("%d lost packets remembered, want the cap %d", n, lostHistoryLen)
	}
	// Only the most recent lostHistoryLen losses are recognised.
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(45)), 0, rng(0, lost+2))
	if st := r.Reordering(); st.SpuriousLosses != lostHistoryLen {
		t.Fatalf("%d spurious losses recognised, want %d", st.SpuriousLosses, lostHistoryLen)
	}
	if r.reorder.lost.n != 0 {
		t.Fatalf("%d records left after all were acknowledged", r.reorder.lost.n)
	}
}

func TestLostHistoryBoundedByAge(t *testing.T) {
	r := loseTwoOfSix(t)
	age := lostHistoryPTOs * (r.RTT().PTOBase() + r.RTT().MaxAckDelay())
	// Just inside the window, packet 1 is still known...
	ack(t, r, protocol.SpaceAppData, t0.Add(age), 0, rng(1, 5))
	if st := r.Reordering(); st.SpuriousLosses != 1 {
		t.Fatalf("inside the window: %+v", st)
	}
	// ...and past it, packet 0 is forgotten.
	ack(t, r, protocol.SpaceAppData, t0.Add(age+time.Nanosecond), 0, rng(0, 5))
	if st := r.Reordering(); st.SpuriousLosses != 1 || r.reorder.lost.n != 0 {
		t.Fatalf("past the window: %+v, %d remembered", st, r.reorder.lost.n)
	}
}

func TestSpuriousLossOnlyInApplicationData(t *testing.T) {
	r := New(Config{IsServer: true})
	for pn := range uint64(6) {
		send(t, r, protocol.SpaceHandshake, pn, t0)
	}
	ack(t, r, protocol.SpaceHandshake, t0.Add(ms(40)), 0, rng(2, 5))
	ack(t, r, protocol.SpaceHandshake, t0.Add(ms(45)), 0, rng(0, 5))
	if st := r.Reordering(); st != (ReorderingStats{PacketThreshold: 3, TimeThreshold: 9.0 / 8}) {
		t.Fatalf("handshake reordering changed the 1-RTT thresholds: %+v", st)
	}
}

func TestPathChangeResetsReorderingThresholds(t *testing.T) {
	r := loseTwoOfSix(t)
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(45)), 0, rng(0, 5))
	r.OnPathChanged(t0.Add(ms(50)))
	want := ReorderingStats{SpuriousLosses: 2, Undos: 1, PacketThreshold: 3, TimeThreshold: 9.0 / 8}
	if st := r.Reordering(); st != want || r.reorder.lost.n != 0 {
		t.Fatalf("after path change: %+v, %d remembered; want %+v", st, r.reorder.lost.n, want)
	}
}

func TestSpuriousLossDoesNotAllocate(t *testing.T) {
	r := confirmedServer()
	var ev Events
	ranges := make([]wire.AckRange, 0, 2)
	now := t0
	var pn uint64
	// Every tenth packet's acknowledgment is held back by 100 packets,
	// five RTTs: the time threshold, capped at two RTTs, declares it lost
	// each time, and its late ACK proves it spurious.
	step := func() {
		now = now.Add(10 * time.Microsecond)
		if err := r.OnPacketSent(protocol.SpaceAppData, SentPacket{Number: pn, TimeSent: now, Size: 1200, AckEliciting: true, InFlight: true}); err != nil {
			t.Fatal(err)
		}
		ranges = ranges[:0]
		if pn >= 20 && (pn-20)%10 != 0 {
			ranges = append(ranges, wire.AckRange{Smallest: pn - 20, Largest: pn - 20})
		}
		if pn >= 120 && (pn-120)%10 == 0 {
			ranges = append(ranges, wire.AckRange{Smallest: pn - 120, Largest: pn - 120})
		}
		if len(ranges) > 0 {
			ev.Reset()
			if err := r.OnAckReceived(protocol.SpaceAppData, ranges, 0, now, &ev); err != nil {
				t.Fatal(err)
			}
		}
		ev.Reset()
		r.OnLossDetectionTimeout(now, &ev)
		pn++
	}
	for range 1000 {
		step()
	}
	before := r.Reordering().SpuriousLosses
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("%v allocations per packet with spurious losses", n)
	}
	if r.Reordering().SpuriousLosses <= before {
		t.Fatal("the steady state saw no spurious loss")
	}
}
