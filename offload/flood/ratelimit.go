package flood

import (
	"context"
	"math"
	"time"
)

// sleep waits for d or until ctx is done. Run's tests run it in virtual
// time (testing/synctest).
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// TokenBucket limits a packet rate: it fills at rate tokens per second up
// to burst tokens, and each packet takes one. Time is passed in, so it is
// deterministic in tests. It is not safe for concurrent use.
type TokenBucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewTokenBucket returns a bucket that starts full at time now. rate must
// be positive and finite, burst at least 1.
func NewTokenBucket(rate float64, burst int, now time.Time) *TokenBucket {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0 {
		rate = math.SmallestNonzeroFloat64
	}
	b := float64(max(burst, 1))
	return &TokenBucket{rate: rate, burst: b, tokens: b, last: now}
}

// Take grants up to n tokens at time now. When none is available it
// returns 0 and how long until the next token. A clock that goes backwards
// adds nothing.
func (b *TokenBucket) Take(now time.Time, n int) (granted int, wait time.Duration) {
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt.Seconds()*b.rate)
		b.last = now
	}
	if n <= 0 {
		return 0, 0
	}
	avail := int(min(b.tokens, float64(n)))
	if avail >= 1 {
		b.tokens -= float64(avail)
		return avail, 0
	}
	secs := (1 - b.tokens) / b.rate
	if secs > float64(time.Hour/time.Second) {
		return 0, time.Hour
	}
	return 0, max(time.Duration(secs*float64(time.Second)), time.Nanosecond)
}

// burstFor picks the bucket depth for a rate: about 1 ms of packets, at
// least 1 and at most one batch, so that sends stay batched at high rates
// and evenly spread at low ones.
func burstFor(rate float64, batch int) int {
	return int(max(1, min(float64(batch), rate/1000)))
}
