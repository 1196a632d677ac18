package congestion

import (
	"testing"
	"time"
)

func TestPacerBurstThenRate(t *testing.T) {
	const cwnd, srtt = 120000, 100 * time.Millisecond
	p := NewPacer(1200)
	// rate = 1.25 * 120000 B / 0.1 s = 1.5 MB/s: one datagram per 800us.
	if got := Rate(cwnd, srtt); got != 1.5e6 {
		t.Fatalf("Rate = %v", got)
	}
	now := t0
	for i := range DefaultBurstPackets {
		if d := p.TimeUntilSend(now, cwnd, srtt); d != 0 {
			t.Fatalf("burst packet %d must go now, wait %v", i, d)
		}
		p.OnPacketSent(now, 1200, cwnd, srtt)
	}
	// The next datagram's tokens take 800us, less than MinPacingWait.
	d := p.TimeUntilSend(now, cwnd, srtt)
	if d != MinPacingWait {
		t.Fatalf("wait after the burst %v, want %v", d, MinPacingWait)
	}
	if next := p.NextSendTime(now, cwnd, srtt); !next.Equal(now.Add(d)) {
		t.Fatalf("NextSendTime %v, want now+%v", next, d)
	}
	// Sending as soon as allowed for one more window takes 1/1.25 RTT:
	// the waits of at least MinPacingWait let tokens build up, which go
	// out without a wait, so the rate holds within one such wait.
	start := now
	for range cwnd / 1200 {
		now = p.NextSendTime(now, cwnd, srtt)
		if p.TimeUntilSend(now, cwnd, srtt) != 0 {
			t.Fatal("not allowed to send at NextSendTime")
		}
		p.OnPacketSent(now, 1200, cwnd, srtt)
	}
	if el := now.Sub(start); el < 80*time.Millisecond-MinPacingWait || el > 80*time.Millisecond+MinPacingWait {
		t.Fatalf("one window took %v, want 80ms", el)
	}
}

func TestPacerBucketCappedAfterIdle(t *testing.T) {
	const cwnd, srtt = 24000, 50 * time.Millisecond
	p := NewPacer(1200)
	now := t0
	p.OnPacketSent(now, 12000, cwnd, srtt) // empty the bucket
	now = now.Add(10 * time.Second)
	sent := 0
	for p.TimeUntilSend(now, cwnd, srtt) == 0 {
		p.OnPacketSent(now, 1200, cwnd, srtt)
		sent++
		if sent > 100 {
			t.Fatal("bucket never empties")
		}
	}
	if sent != DefaultBurstPackets {
		t.Fatalf("burst after idle %d packets, want %d", sent, DefaultBurstPackets)
	}
	p.SetBurstPackets(2)
	now = now.Add(10 * time.Second)
	sent = 0
	for p.TimeUntilSend(now, cwnd, srtt) == 0 && sent < 100 {
		p.OnPacketSent(now, 1200, cwnd, srtt)
		sent++
	}
	if sent != 2 {
		t.Fatalf("burst with SetBurstPackets(2): %d", sent)
	}
}

func TestPacerRateFollowsWindow(t *testing.T) {
	p := NewPacer(1200)
	now := t0
	p.OnPacketSent(now, 12000, 12000, ms(1000))
	small := p.TimeUntilSend(now, 12000, ms(1000))
	big := p.TimeUntilSend(now, 120000, ms(1000)) // above MinPacingWait
	if small != 10*big && small != 10*big-1 && small != 10*big+1 {
		t.Fatalf("10x window must mean 1/10 wait: %v vs %v", small, big)
	}
	// No RTT estimate: no pacing.
	if d := p.TimeUntilSend(now, 12000, 0); d != 0 {
		t.Fatalf("wait %v without an RTT", d)
	}
}

// TestPacerFastPathBatchesWaits: where one datagram's tokens come back in
// microseconds, the pacer still waits MinPacingWait, and then lets the
// whole wait's tokens go in one burst rather than DefaultBurstPackets.
func TestPacerFastPathBatchesWaits(t *testing.T) {
	// rate = 1.25 * 1.2 MB / 1 ms = 1.5 GB/s: 1200 bytes per 800ns.
	const cwnd, srtt = 1_200_000, time.Millisecond
	p := NewPacer(1200)
	now := t0
	for p.TimeUntilSend(now, cwnd, srtt) == 0 {
		p.OnPacketSent(now, 1200, cwnd, srtt)
	}
	if d := p.TimeUntilSend(now, cwnd, srtt); d != MinPacingWait {
		t.Fatalf("wait after the burst %v, want %v", d, MinPacingWait)
	}
	now = now.Add(MinPacingWait)
	sent := 0
	for p.TimeUntilSend(now, cwnd, srtt) == 0 && sent < 10000 {
		p.OnPacketSent(now, 1200, cwnd, srtt)
		sent++
	}
	if want := 1250; sent != want { // 1.5 GB/s for 1 ms
		t.Fatalf("sent %d after the wait, want %d", sent, want)
	}
	// After a long idle period the bucket holds burstInterval's tokens.
	now = now.Add(time.Second)
	sent = 0
	for p.TimeUntilSend(now, cwnd, srtt) == 0 && sent < 10000 {
		p.OnPacketSent(now, 1200, cwnd, srtt)
		sent++
	}
	if want := 2500; sent != want {
		t.Fatalf("burst after idle %d, want %d", sent, want)
	}
}
