package congestion

import (
	"math"
	"time"
)

const (
	// PacingGainNumerator / PacingGainDenominator is N of RFC 9002
	// section 7.7: pacing a little faster than cwnd/srtt keeps the pacer
	// from being the bottleneck when the window is right.
	PacingGainNumerator   = 5
	PacingGainDenominator = 4
	// DefaultBurstPackets is the burst the pacer allows, in datagrams, as
	// quic-go's (RFC 9002 section 7.7 allows up to the initial window).
	// Connections do not pace before their first RTT sample, so that a
	// first flight, 0-RTT data included, leaves whole.
	DefaultBurstPackets = 10

	// MinPacingWait is the shortest wait the pacer asks for. On a fast
	// path one datagram's worth of tokens comes back within microseconds,
	// and a timer wakeup per datagram or two (a goroutine switch, often a
	// thread wakeup, and a sendmmsg call for a handful of datagrams) costs
	// more CPU than the finer spacing is worth; waiting a little longer
	// lets the tokens of the whole interval go out in one batch. quic-go
	// waits at least 1 ms as well.
	MinPacingWait = time.Millisecond
	// burstInterval sizes the bucket on fast paths: it holds at least what
	// the rate brings in this long (a MinPacingWait wait that ends a timer
	// granularity late), so that waking after MinPacingWait finds the
	// tokens of the whole wait, not just DefaultBurstPackets' worth.
	burstInterval = 2 * MinPacingWait
)

// Pacer spreads packets over the round trip with a token bucket that fills
// at N*cwnd/smoothed_rtt bytes per second and holds at most a burst of
// packets, or what the rate brings in burstInterval where that is more. Callers pass the current window and RTT to every call, so the
// pacer has no hidden clock or reference to the controller and tests drive
// it with chosen times.
type Pacer struct {
	maxDatagramSize int
	burstPackets    int
	tokens          float64 // bytes
	last            time.Time
}

// NewPacer returns a pacer that allows a full burst right away.
func NewPacer(maxDatagramSize int) *Pacer {
	maxDatagramSize = max(maxDatagramSize, DefaultMaxDatagramSize)
	p := &Pacer{maxDatagramSize: maxDatagramSize, burstPackets: DefaultBurstPackets}
	p.tokens = p.capacity()
	return p
}

// SetMaxDatagramSize updates the packet size the pacer meters. Sizes below
// DefaultMaxDatagramSize are ignored.
func (p *Pacer) SetMaxDatagramSize(size int) {
	if size >= DefaultMaxDatagramSize {
		p.maxDatagramSize = size
		p.tokens = min(p.tokens, p.capacity())
	}
}

// SetBurstPackets sets how many full-size packets may leave back to back
// (at least 1).
func (p *Pacer) SetBurstPackets(n int) {
	p.burstPackets = max(n, 1)
	p.tokens = min(p.tokens, p.capacity())
}

func (p *Pacer) capacity() float64 { return float64(p.burstPackets * p.maxDatagramSize) }

// capacityAt is the bucket's size at the pacing rate: the burst, or what
// the rate brings in burstInterval.
func (p *Pacer) capacityAt(rate float64) float64 {
	return max(p.capacity(), rate*burstInterval.Seconds())
}

// Rate returns the pacing rate in bytes per second, or +Inf when there is
// no RTT to pace by.
func Rate(cwnd int, smoothedRTT time.Duration) float64 {
	if smoothedRTT <= 0 {
		return math.Inf(1)
	}
	return float64(cwnd) * PacingGainNumerator / PacingGainDenominator / smoothedRTT.Seconds()
}

// tokensAt returns the bucket level at now without changing the pacer.
func (p *Pacer) tokensAt(now time.Time, rate float64) float64 {
	if p.last.IsZero() || !now.After(p.last) {
		return p.tokens
	}
	return min(p.capacityAt(rate), p.tokens+rate*now.Sub(p.last).Seconds())
}

// TimeUntilSend returns how long the sender must wait before the next
// full-size packet, at least MinPacingWait; 0 means it may send now.
func (p *Pacer) TimeUntilSend(now time.Time, cwnd int, smoothedRTT time.Duration) time.Duration {
	rate := Rate(cwnd, smoothedRTT)
	missing := float64(p.maxDatagramSize) - p.tokensAt(now, rate)
	if missing <= 0 || math.IsInf(rate, 1) || rate <= 0 {
		return 0
	}
	// Round up so that sending at the returned time always finds a full
	// packet's worth of tokens.
	return max(time.Duration(math.Ceil(missing/rate*float64(time.Second))), MinPacingWait)
}

// NextSendTime returns when the next full-size packet may be sent: now or
// later.
func (p *Pacer) NextSendTime(now time.Time, cwnd int, smoothedRTT time.Duration) time.Time {
	return now.Add(p.TimeUntilSend(now, cwnd, smoothedRTT))
}

// OnPacketSent takes bytes out of the bucket. A packet sent ahead of the
// pacer (a probe) empties the bucket but does not put it in debt.
func (p *Pacer) OnPacketSent(now time.Time, bytes, cwnd int, smoothedRTT time.Duration) {
	p.tokens = max(0, p.tokensAt(now, Rate(cwnd, smoothedRTT))-float64(bytes))
	if now.After(p.last) {
		p.last = now
	}
}
