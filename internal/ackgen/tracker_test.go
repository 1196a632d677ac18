package ackgen

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func mustReceive(t *testing.T, tr *Tracker, pn uint64, eliciting bool, now time.Time) {
	t.Helper()
	if err := tr.Received(pn, eliciting, protocol.ECNNotECT, now); err != nil {
		t.Fatalf("Received(%d): %v", pn, err)
	}
}

func ranges(t *testing.T, tr *Tracker) []wire.AckRange {
	t.Helper()
	ack, ok := tr.BuildAck(make([]wire.AckRange, 0, 64), t0)
	if !ok {
		return nil
	}
	return ack.Ranges
}

func TestAppDataEverySecondPacket(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	mustReceive(t, tr, 0, true, t0)
	if tr.AckNow() {
		t.Fatal("first in-order packet must not trigger an immediate ACK")
	}
	if got, want := tr.AlarmTime(), t0.Add(DefaultMaxAckDelay); !got.Equal(want) {
		t.Fatalf("alarm = %v, want %v", got, want)
	}
	if tr.ShouldSendAck(t0.Add(ms(24))) {
		t.Fatal("ACK due before max_ack_delay")
	}
	mustReceive(t, tr, 1, true, t0.Add(ms(5)))
	if !tr.AckNow() {
		t.Fatal("second ack-eliciting packet must trigger an ACK")
	}
	ack, ok := tr.BuildAck(nil, t0.Add(ms(7)))
	if !ok {
		t.Fatal("BuildAck: nothing to acknowledge")
	}
	if want := []wire.AckRange{{Smallest: 0, Largest: 1}}; !reflect.DeepEqual(ack.Ranges, want) {
		t.Fatalf("ranges = %v, want %v", ack.Ranges, want)
	}
	if ack.Delay != ms(2) {
		t.Fatalf("delay = %v, want 2ms (since largest arrived)", ack.Delay)
	}
	if ack.HasECN {
		t.Fatal("HasECN without any ECN-marked packet")
	}
	tr.OnAckSent()
	if tr.AckNow() || !tr.AlarmTime().IsZero() || tr.ShouldSendAck(t0.Add(time.Hour)) {
		t.Fatal("OnAckSent must clear every pending reason")
	}
}

func TestConfigurableThreshold(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{AckElicitingThreshold: 4, MaxAckDelay: ms(10)})
	for pn := uint64(0); pn < 3; pn++ {
		mustReceive(t, tr, pn, true, t0.Add(ms(int(pn))))
		if tr.AckNow() {
			t.Fatalf("ACK after %d packets, threshold 4", pn+1)
		}
	}
	if got := tr.AlarmTime(); !got.Equal(t0.Add(ms(10))) {
		t.Fatalf("alarm = %v: must stay at the first packet's deadline", got)
	}
	if !tr.ShouldSendAck(t0.Add(ms(10))) {
		t.Fatal("alarm expired but no ACK due")
	}
	mustReceive(t, tr, 3, true, t0.Add(ms(3)))
	if !tr.AckNow() {
		t.Fatal("no ACK after 4 packets")
	}
}

func TestHandshakeSpacesAckImmediately(t *testing.T) {
	for _, sp := range []protocol.PacketNumberSpace{protocol.SpaceInitial, protocol.SpaceHandshake} {
		tr := NewTracker(sp, Config{})
		mustReceive(t, tr, 0, true, t0)
		if !tr.AckNow() {
			t.Errorf("%v: ack-eliciting packet not acknowledged at once", sp)
		}
	}
}

func TestNonElicitingNeverTriggers(t *testing.T) {
	for _, sp := range []protocol.PacketNumberSpace{protocol.SpaceInitial, protocol.SpaceHandshake, protocol.SpaceAppData} {
		tr := NewTracker(sp, Config{})
		// Out of order, with gaps, and more than the threshold: still nothing.
		for _, pn := range []uint64{5, 0, 9, 2, 3} {
			mustReceive(t, tr, pn, false, t0)
		}
		if tr.AckNow() || !tr.AlarmTime().IsZero() || tr.ShouldSendAck(t0.Add(time.Hour)) {
			t.Errorf("%v: non-ack-eliciting packets triggered an ACK", sp)
		}
		if !tr.HasRanges() {
			t.Errorf("%v: non-ack-eliciting packets must still be recorded", sp)
		}
	}
}

func TestGapTriggersImmediateAck(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{AckElicitingThreshold: 100})
	mustReceive(t, tr, 0, true, t0)
	mustReceive(t, tr, 1, true, t0)
	if tr.AckNow() {
		t.Fatal("in-order packets triggered an immediate ACK")
	}
	mustReceive(t, tr, 3, true, t0) // 2 is missing
	if !tr.AckNow() {
		t.Fatal("packet after a gap must be acknowledged at once")
	}
	tr.OnAckSent()
	mustReceive(t, tr, 4, true, t0)
	if tr.AckNow() {
		t.Fatal("in-order packet after the gap triggered an immediate ACK")
	}
	mustReceive(t, tr, 2, true, t0) // fills the gap
	if !tr.AckNow() {
		t.Fatal("packet filling a gap must be acknowledged at once")
	}
	if want := []wire.AckRange{{Smallest: 0, Largest: 4}}; !reflect.DeepEqual(ranges(t, tr), want) {
		t.Fatalf("ranges = %v, want %v", ranges(t, tr), want)
	}
}

func TestGapDetectionCountsNonElicitingPackets(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{AckElicitingThreshold: 100})
	mustReceive(t, tr, 0, true, t0)
	mustReceive(t, tr, 1, false, t0) // an ACK-only packet: received, not missing
	mustReceive(t, tr, 2, true, t0)
	if tr.AckNow() {
		t.Fatal("no packet is missing, yet an immediate ACK was asked for")
	}
	mustReceive(t, tr, 4, false, t0)
	mustReceive(t, tr, 5, true, t0) // 3 is missing between 2 and 5
	if !tr.AckNow() {
		t.Fatal("missing packet between ack-eliciting packets not detected")
	}
}

func TestFirstPacketAfterLossIsOutOfOrder(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	mustReceive(t, tr, 2, true, t0) // 0 and 1 lost
	if !tr.AckNow() {
		t.Fatal("first packet with missing predecessors must be acknowledged at once")
	}
}

func TestECN(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{AckElicitingThreshold: 100})
	for pn, mark := range []protocol.ECN{protocol.ECNECT0, protocol.ECNECT0, protocol.ECNECT1, protocol.ECNNotECT} {
		if err := tr.Received(uint64(pn), true, mark, t0); err != nil {
			t.Fatal(err)
		}
	}
	if tr.AckNow() {
		t.Fatal("ECT marks must not trigger an immediate ACK")
	}
	if err := tr.Received(4, false, protocol.ECNCE, t0); err != nil {
		t.Fatal(err)
	}
	if tr.AckNow() {
		t.Fatal("CE on a non-ack-eliciting packet must not trigger an ACK")
	}
	if err := tr.Received(5, true, protocol.ECNCE, t0); err != nil {
		t.Fatal(err)
	}
	if !tr.AckNow() {
		t.Fatal("CE on an ack-eliciting packet must trigger an immediate ACK")
	}
	ack, _ := tr.BuildAck(nil, t0)
	if !ack.HasECN || ack.ECT0 != 2 || ack.ECT1 != 1 || ack.CE != 2 {
		t.Fatalf("ECN counts = %+v", ack)
	}
}

func TestDuplicates(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	if tr.IsDuplicate(0) {
		t.Fatal("empty tracker reports a duplicate")
	}
	for _, pn := range []uint64{10, 12, 11, 20} {
		mustReceive(t, tr, pn, true, t0)
	}
	for pn := uint64(0); pn < 25; pn++ {
		want := pn >= 10 && pn <= 12 || pn == 20
		if got := tr.IsDuplicate(pn); got != want {
			t.Errorf("IsDuplicate(%d) = %v, want %v", pn, got, want)
		}
	}
	tr.OnAckSent()
	if err := tr.Received(11, true, protocol.ECNNotECT, t0); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: err = %v", err)
	}
	if tr.AckNow() || !tr.AlarmTime().IsZero() {
		t.Fatal("a duplicate must not change the ACK state")
	}
	if err := tr.Received(MaxPacketNumber+1, true, protocol.ECNNotECT, t0); !errors.Is(err, ErrPacketNumberTooBig) {
		t.Fatalf("pn 2^62: err = %v", err)
	}
	if err := tr.Received(MaxPacketNumber, true, protocol.ECNNotECT, t0); err != nil {
		t.Fatalf("pn 2^62-1: %v", err)
	}
}

// TestRangesDescending checks the layout RFC 9000 section 19.3.1 requires:
// ranges in descending order, largest first, whatever the arrival order.
func TestRangesDescending(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	for _, pn := range []uint64{2, 10, 5, 9, 6, 8} {
		mustReceive(t, tr, pn, true, t0)
	}
	want := []wire.AckRange{{Smallest: 8, Largest: 10}, {Smallest: 5, Largest: 6}, {Smallest: 2, Largest: 2}}
	if got := ranges(t, tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges = %v, want %v", got, want)
	}
	// Merging two ranges through the single missing packet between them.
	mustReceive(t, tr, 7, true, t0)
	want = []wire.AckRange{{Smallest: 5, Largest: 10}, {Smallest: 2, Largest: 2}}
	if got := ranges(t, tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("after 7: ranges = %v, want %v", got, want)
	}
}

func TestBuildAckUsesCallerBuffer(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	mustReceive(t, tr, 0, true, t0)
	mustReceive(t, tr, 2, true, t0)
	buf := make([]wire.AckRange, 3, 8)
	ack, ok := tr.BuildAck(buf, t0)
	if !ok || len(ack.Ranges) != 2 || &ack.Ranges[0] != &buf[0] {
		t.Fatalf("ranges not written into the caller's buffer: %v", ack.Ranges)
	}
	// Building must not consume the pending ACK.
	if !tr.AckNow() {
		t.Fatal("BuildAck cleared the ACK state")
	}
	if _, ok := NewTracker(protocol.SpaceAppData, Config{}).BuildAck(buf, t0); ok {
		t.Fatal("BuildAck on an empty tracker returned a frame")
	}
}

func TestMaxRangesDropsOldest(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{MaxRanges: 3})
	for _, pn := range []uint64{0, 1, 3, 5, 7} { // ranges 0-1, 3, 5, 7
		mustReceive(t, tr, pn, true, t0)
	}
	want := []wire.AckRange{{Smallest: 7, Largest: 7}, {Smallest: 5, Largest: 5}, {Smallest: 3, Largest: 3}}
	if got := ranges(t, tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges = %v, want %v", got, want)
	}
	// Forgotten packets, received or not, must never be processed again.
	for _, pn := range []uint64{0, 1} {
		if !tr.IsDuplicate(pn) {
			t.Errorf("IsDuplicate(%d) = false in the forgotten range", pn)
		}
	}
	for _, pn := range []uint64{2, 4} {
		if tr.IsDuplicate(pn) {
			t.Errorf("missing packet %d above the floor reported as a duplicate", pn)
		}
	}
	// A packet older than every kept range, with the set full, is
	// forgotten at once instead of evicting newer state.
	tr2 := NewTracker(protocol.SpaceAppData, Config{MaxRanges: 2})
	for _, pn := range []uint64{5, 7, 3} {
		mustReceive(t, tr2, pn, true, t0)
	}
	want = []wire.AckRange{{Smallest: 7, Largest: 7}, {Smallest: 5, Largest: 5}}
	if got := ranges(t, tr2); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges = %v, want %v", got, want)
	}
	if !tr2.IsDuplicate(3) || tr2.IsDuplicate(4) {
		t.Fatal("floor after dropping the new oldest packet is wrong")
	}
}

func TestForgetAcknowledgedRanges(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	for _, pn := range []uint64{0, 1, 2, 4, 5, 8, 9} {
		mustReceive(t, tr, pn, true, t0)
	}
	// Our ACK with Largest Acknowledged 4 was itself acknowledged.
	tr.OnAckAcknowledged(4)
	want := []wire.AckRange{{Smallest: 8, Largest: 9}, {Smallest: 5, Largest: 5}}
	if got := ranges(t, tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges = %v, want %v", got, want)
	}
	if !tr.IsDuplicate(3) {
		t.Fatal("packet 3, below the acknowledged ACK, must count as a duplicate")
	}
	if tr.IsDuplicate(6) {
		t.Fatal("packet 6 is above the acknowledged ACK and still acceptable")
	}
	// An older ACK being acknowledged late changes nothing.
	tr.OnAckAcknowledged(2)
	if got := ranges(t, tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("late acknowledgement changed ranges to %v", got)
	}
	tr.OnAckAcknowledged(1 << 63) // bogus: clamped to the largest received
	if tr.HasRanges() {
		t.Fatalf("ranges left after everything was acknowledged: %v", ranges(t, tr))
	}
	if tr.IsDuplicate(10) {
		t.Fatal("a new packet number reported as a duplicate")
	}
	tr.OnAckSent()
	mustReceive(t, tr, 10, true, t0)
	if tr.AckNow() {
		t.Fatal("next in-order packet after forgetting looked out of order")
	}
	if want := []wire.AckRange{{Smallest: 10, Largest: 10}}; !reflect.DeepEqual(ranges(t, tr), want) {
		t.Fatalf("ranges = %v, want %v", ranges(t, tr), want)
	}
}

func TestAckDelayClampsAndEncodes(t *testing.T) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	mustReceive(t, tr, 0, true, t0.Add(ms(10)))
	mustReceive(t, tr, 1, true, t0.Add(ms(20)))
	mustReceive(t, tr, 0+2, true, t0.Add(ms(30)))
	if ack, _ := tr.BuildAck(nil, t0.Add(ms(25))); ack.Delay != 0 {
		t.Fatalf("delay with a clock behind the receive time = %v, want 0", ack.Delay)
	}
	ack, _ := tr.BuildAck(nil, t0.Add(ms(31)))
	if ack.Delay != ms(1) {
		t.Fatalf("delay = %v, want 1ms", ack.Delay)
	}
	cases := []struct {
		d    time.Duration
		exp  uint8
		want uint64
	}{
		{ms(1), 3, 125}, // the default exponent 3: 1000 us / 8
		{ms(1), 0, 1000},
		{-ms(1), 3, 0},
		{time.Second, 20, 0},
		{time.Second, 30, 0}, // clamped to 20
		{1 << 30 * time.Microsecond, 30, 1 << 10},
	}
	for _, c := range cases {
		if got := EncodeAckDelay(c.d, c.exp); got != c.want {
			t.Errorf("EncodeAckDelay(%v, %d) = %d, want %d", c.d, c.exp, got, c.want)
		}
	}
}

func TestTrackerSpace(t *testing.T) {
	if NewTracker(protocol.SpaceHandshake, Config{}).Space() != protocol.SpaceHandshake {
		t.Error("Space() lost the space")
	}
}
