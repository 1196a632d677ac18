package recovery

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// skippedNumbers runs s over the numbers below n and returns those it
// left out.
func skippedNumbers(s *PacketNumberSkipper, n uint64) []uint64 {
	var skipped []uint64
	for pn := uint64(0); pn < n; {
		next := s.Next(pn)
		for gap := pn + 1; gap < next; gap++ {
			skipped = append(skipped, gap)
		}
		pn = next
	}
	return skipped
}

func TestPacketNumberSkipperZeroValue(t *testing.T) {
	var s PacketNumberSkipper
	if skipped := skippedNumbers(&s, 100_000); len(skipped) != 0 {
		t.Fatalf("the zero value skipped %v", skipped[:min(len(skipped), 5)])
	}
}

// The k-th skipped number lies in the second half of a period that starts
// after the previous one; periods double from 256 to 8192 numbers.
func TestPacketNumberSkipperSchedule(t *testing.T) {
	var s PacketNumberSkipper
	s.Start(rand.NewPCG(1, 2))
	skipped := skippedNumbers(&s, 1_000_000)
	start, period := uint64(0), uint64(minSkipPeriod)
	for i, pn := range skipped {
		if pn < start+period/2 || pn >= start+period {
			t.Fatalf("skip %d at %d, outside [%d, %d)", i, pn, start+period/2, start+period)
		}
		start, period = pn+1, min(2*period, maxSkipPeriod)
	}
	// 5 periods grow to the maximum (about 8k numbers), then one skip
	// every 4k to 8k numbers.
	if n := len(skipped); n < 1_000_000/maxSkipPeriod || n > 1_000_000/(maxSkipPeriod/2)+5 {
		t.Fatalf("%d skips in a million numbers", n)
	}
	// The same seed gives the same numbers; another seed other ones.
	var again, other PacketNumberSkipper
	again.Start(rand.NewPCG(1, 2))
	other.Start(rand.NewPCG(3, 4))
	if !slices.Equal(skippedNumbers(&again, 1_000_000), skipped) {
		t.Fatal("the same seed skipped other numbers")
	}
	if slices.Equal(skippedNumbers(&other, 1_000_000), skipped) {
		t.Fatal("another seed skipped the same numbers")
	}
	// Without a source the runtime's generator draws, on the same schedule.
	var unseeded PacketNumberSkipper
	unseeded.Start(nil)
	if first := skippedNumbers(&unseeded, 300); len(first) != 1 || first[0] < minSkipPeriod/2 {
		t.Fatalf("unseeded: skipped %v below 300", first)
	}
}

func TestPacketNumberSkipperAllocatesNothing(t *testing.T) {
	var s PacketNumberSkipper
	s.Start(rand.NewPCG(5, 6))
	pn := uint64(0)
	if n := testing.AllocsPerRun(100_000, func() { pn = s.Next(pn) }); n != 0 {
		t.Fatalf("%v allocations per packet number", n)
	}
}

// Packets numbered by the skipper: an ACK of everything sent is fine and
// never declares a skipped number lost; an ACK that claims a skipped
// number is refused as PROTOCOL_VIOLATION.
func TestSkippedPacketNumbersInRecovery(t *testing.T) {
	r := confirmedServer()
	var s PacketNumberSkipper
	s.Start(rand.NewPCG(7, 8))
	var sent []uint64
	for pn := uint64(0); len(sent) < 2000; pn = s.Next(pn) {
		send(t, r, protocol.SpaceAppData, pn, t0)
		sent = append(sent, pn)
	}
	var ranges []wire.AckRange // of what was sent, largest first
	for i := len(sent) - 1; i >= 0; i-- {
		if n := len(ranges); n > 0 && ranges[n-1].Smallest == sent[i]+1 {
			ranges[n-1].Smallest = sent[i]
		} else {
			ranges = append(ranges, rng(sent[i], sent[i]))
		}
	}
	if len(ranges) < 3 {
		t.Fatalf("%d ranges: nothing skipped in 2000 packets", len(ranges))
	}
	// Claiming the gap between the two newest ranges.
	optimistic := slices.Clone(ranges)
	optimistic[0].Smallest = optimistic[1].Smallest
	optimistic = slices.Delete(optimistic, 1, 2)
	if err := r.OnAckReceived(protocol.SpaceAppData, optimistic, 0, t0.Add(ms(50)), nil); !errors.Is(err, ErrUnsentPacketAcked) {
		t.Fatalf("optimistic ACK: %v", err)
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(50)), 0, ranges...)
	if len(ev.Acked) != len(sent) || len(ev.Lost) != 0 || r.BytesInFlight() != 0 {
		t.Fatalf("acked %d of %d, lost %v, in flight %d", len(ev.Acked), len(sent), numbers(ev.Lost), r.BytesInFlight())
	}
}
