package recovery

import (
	"errors"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// FuzzOnAckReceived feeds arbitrary ACK frames, interleaved with sends
// and timer expiries, and checks the bookkeeping invariants: no panic, a
// rejected frame changes nothing, bytes in flight match the outstanding
// packets, no packet is reported twice or without being sent, and the
// reordering thresholds and lost packet history stay within their bounds.
//
// Input: a byte stream of commands. 0x00-0x3f: send (low bits: skip and
// flags); 0x40-0x7f: advance the clock and fire the timer; 0x80-0xff: an
// ACK frame with (b & 7) + 1 ranges, each read as two bytes: the distance
// below the previous range and the range length.
func FuzzOnAckReceived(f *testing.F) {
	f.Add([]byte{0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x03})
	f.Add([]byte{0x00, 0x01, 0x02, 0x03, 0x00, 0x81, 0x00, 0x00, 0x02, 0x00, 0x7f, 0x7f})
	f.Add([]byte{0x10, 0x00, 0x00, 0x80, 0x05, 0x00})
	f.Add([]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x50, 0x60})
	// Three packets lost to the packet threshold, then acknowledged.
	f.Add([]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x02, 0x80, 0x00, 0x05})
	// A time threshold loss, then acknowledged.
	f.Add([]byte{0x00, 0x80, 0x00, 0x00, 0x00, 0x48, 0x00, 0x80, 0x00, 0x00, 0x80, 0x00, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := New(Config{IsServer: data == nil || len(data)%2 == 0})
		now := t0
		var pn uint64
		sent := map[uint64]bool{}
		reported := map[uint64]bool{}
		var ev Events
		check := func() {
			for _, p := range ev.Acked {
				if !sent[p.Number] || reported[p.Number] {
					t.Fatalf("packet %d acked: sent %v, already reported %v", p.Number, sent[p.Number], reported[p.Number])
				}
				reported[p.Number] = true
			}
			for _, p := range ev.Lost {
				if !sent[p.Number] || reported[p.Number] {
					t.Fatalf("packet %d lost: sent %v, already reported %v", p.Number, sent[p.Number], reported[p.Number])
				}
				reported[p.Number] = true
			}
			total := 0
			for sp := range protocol.NumSpaces {
				q := &r.spaces[sp].sent
				for i := range q.len() {
					if p := q.at(i); p.state == stateOutstanding && p.InFlight {
						total += p.Size
					}
				}
			}
			if total != r.BytesInFlight() {
				t.Fatalf("bytes in flight %d, outstanding packets hold %d", r.BytesInFlight(), total)
			}
			o := &r.reorder
			if o.packetThreshold < defaultPacketThreshold || o.packetThreshold > maxPacketThreshold ||
				o.timeEighths < defaultTimeThresholdEighths || o.timeEighths > maxTimeThresholdEighths ||
				o.lost.n < 0 || o.lost.n > lostHistoryLen || o.undos > o.spurious {
				t.Fatalf("reordering state out of bounds: %+v", r.Reordering())
			}
		}
		for i := 0; i < len(data); i++ {
			b := data[i]
			ev.Reset()
			switch {
			case b < 0x40:
				pn += uint64(b & 3) // skip 0..3 numbers
				p := SentPacket{Number: pn, TimeSent: now, Size: 100 + int(b), AckEliciting: b&4 == 0, InFlight: b&8 == 0}
				if err := r.OnPacketSent(protocol.SpaceAppData, p); err != nil {
					t.Fatal(err)
				}
				sent[pn] = true
				pn++
				now = now.Add(time.Millisecond)
			case b < 0x80:
				now = now.Add(time.Duration(b&0x3f) * 10 * time.Millisecond)
				r.OnLossDetectionTimeout(now, &ev)
			default:
				var ranges []wire.AckRange
				next := pn // one above the largest the frame may cover
				for n := int(b&7) + 1; n > 0 && i+2 < len(data); n-- {
					below, length := uint64(data[i+1]), uint64(data[i+2])
					i += 2
					if below >= next {
						// Deliberately malformed: let validation see it.
						ranges = append(ranges, wire.AckRange{Smallest: below, Largest: below + length/4})
						continue
					}
					largest := next - 1 - below
					smallest := largest - min(length, largest)
					ranges = append(ranges, wire.AckRange{Smallest: smallest, Largest: largest})
					if smallest < 2 {
						break
					}
					next = smallest - 1
				}
				inFlight := r.BytesInFlight()
				err := r.OnAckReceived(protocol.SpaceAppData, ranges, time.Duration(b)*time.Millisecond, now, &ev)
				if err != nil {
					if _, ok := peerCode(err); !ok {
						t.Fatalf("unexpected error %v", err)
					}
					if r.BytesInFlight() != inFlight || len(ev.Acked)+len(ev.Lost) != 0 {
						t.Fatal("rejected ACK changed state")
					}
					if !errors.Is(err, ErrInvalidAckRanges) && !coversUnsent(ranges, sent) {
						t.Fatalf("ACK %v of sent packets rejected: %v", ranges, err)
					}
				}
				now = now.Add(time.Millisecond)
			}
			check()
		}
	})
}

// coversUnsent reports whether ranges (at most a few hundred numbers
// each, as the fuzz target builds them) include a number never sent.
func coversUnsent(ranges []wire.AckRange, sent map[uint64]bool) bool {
	for _, rg := range ranges {
		for n := rg.Smallest; n <= rg.Largest; n++ {
			if !sent[n] {
				return true
			}
		}
	}
	return false
}
