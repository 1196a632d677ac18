package congestion

import (
	"testing"
	"time"
)

func BenchmarkCubicOnPacketAcked(b *testing.B) {
	c := newTestCubic(fixedRTT(ms(50)))
	loss := growCubicTo(c, 100)
	now := loss
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Microsecond)
		c.OnPacketAcked(now, now.Add(-ms(50)), 1200, c.CongestionWindow())
	}
}

func BenchmarkNewRenoOnPacketAcked(b *testing.B) {
	c := newTestReno()
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Microsecond)
		c.OnPacketAcked(now, now.Add(-ms(50)), 1200, c.CongestionWindow())
	}
}

func BenchmarkPacer(b *testing.B) {
	p := NewPacer(1200)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = p.NextSendTime(now, 120000, ms(50))
		p.OnPacketSent(now, 1200, 120000, ms(50))
	}
}
