package ackgen

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// BenchmarkReceiveAndAck is the steady state of a bulk download: packets in
// order, an ACK every second packet, and our ACKs acknowledged a little
// later so the range set stays small.
func BenchmarkReceiveAndAck(b *testing.B) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	buf := make([]wire.AckRange, 0, DefaultMaxRanges)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pn := uint64(i)
		now = now.Add(time.Microsecond)
		if tr.IsDuplicate(pn) {
			b.Fatal("duplicate")
		}
		if err := tr.Received(pn, true, protocol.ECNNotECT, now); err != nil {
			b.Fatal(err)
		}
		if tr.ShouldSendAck(now) {
			ack, ok := tr.BuildAck(buf, now)
			if !ok {
				b.Fatal("no ACK")
			}
			buf = ack.Ranges
			tr.OnAckSent()
			if pn > 64 && pn%64 == 1 {
				tr.OnAckAcknowledged(pn - 32)
			}
		}
	}
}

// BenchmarkReceiveReordered keeps several gaps open: every fourth packet
// arrives late, so ACKs carry multiple ranges.
func BenchmarkReceiveReordered(b *testing.B) {
	tr := NewTracker(protocol.SpaceAppData, Config{})
	buf := make([]wire.AckRange, 0, DefaultMaxRanges)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pn := uint64(i)
		switch i % 4 {
		case 1:
			pn++ // 2 arrives before 1
		case 2:
			pn--
		}
		now = now.Add(time.Microsecond)
		_ = tr.Received(pn, true, protocol.ECNECT0, now)
		if tr.ShouldSendAck(now) {
			ack, _ := tr.BuildAck(buf, now)
			buf = ack.Ranges
			tr.OnAckSent()
			if pn > 64 && pn%32 == 0 {
				tr.OnAckAcknowledged(pn - 16)
			}
		}
	}
}
