package recovery

import "time"

const (
	// DefaultInitialRTT is kInitialRtt (RFC 9002 section 6.2.2).
	DefaultInitialRTT = 333 * time.Millisecond
	// DefaultMaxAckDelay is the peer's max_ack_delay when its transport
	// parameters do not set one (RFC 9000 section 18.2).
	DefaultMaxAckDelay = 25 * time.Millisecond
	// Granularity is kGranularity, the timer granularity (RFC 9002
	// section 6.1.2).
	Granularity = time.Millisecond
)

// RTTStats is the RTT estimator of RFC 9002 section 5. The zero value is
// not ready; use NewRTTStats.
type RTTStats struct {
	initial     time.Duration
	maxAckDelay time.Duration

	latest   time.Duration
	min      time.Duration
	smoothed time.Duration
	variance time.Duration

	hasSample     bool
	firstSampleAt time.Time
}

// NewRTTStats returns an estimator that assumes initialRTT until the first
// sample (DefaultInitialRTT when initialRTT is not positive).
func NewRTTStats(initialRTT time.Duration) RTTStats {
	if initialRTT <= 0 {
		initialRTT = DefaultInitialRTT
	}
	return RTTStats{
		initial:     initialRTT,
		maxAckDelay: DefaultMaxAckDelay,
		smoothed:    initialRTT,
		variance:    initialRTT / 2,
	}
}

// SetMaxAckDelay records the peer's max_ack_delay transport parameter.
func (r *RTTStats) SetMaxAckDelay(d time.Duration) { r.maxAckDelay = max(d, 0) }

// MaxAckDelay returns the peer's max_ack_delay.
func (r *RTTStats) MaxAckDelay() time.Duration { return r.maxAckDelay }

// Update adds an RTT sample: latest is the time from sending the largest
// newly acknowledged packet to receiving its ACK, ackDelay the delay the
// peer reported. After handshake confirmation the ack delay is capped at
// max_ack_delay; it is never subtracted when that would take the sample
// below min_rtt (RFC 9002 section 5.3).
func (r *RTTStats) Update(latest, ackDelay time.Duration, handshakeConfirmed bool, now time.Time) {
	latest = max(latest, 0)
	ackDelay = max(ackDelay, 0)
	r.latest = latest
	if !r.hasSample {
		r.hasSample = true
		r.firstSampleAt = now
		r.min = latest
		r.smoothed = latest
		r.variance = latest / 2
		return
	}
	r.min = min(r.min, latest)
	if handshakeConfirmed {
		ackDelay = min(ackDelay, r.maxAckDelay)
	}
	adjusted := latest
	if latest >= r.min+ackDelay {
		adjusted = latest - ackDelay
	}
	diff := r.smoothed - adjusted
	if diff < 0 {
		diff = -diff
	}
	r.variance = (3*r.variance + diff) / 4
	r.smoothed = (7*r.smoothed + adjusted) / 8
}

// LatestRTT returns latest_rtt, 0 before any sample.
func (r *RTTStats) LatestRTT() time.Duration { return r.latest }

// MinRTT returns min_rtt, 0 before any sample.
func (r *RTTStats) MinRTT() time.Duration { return r.min }

// SmoothedRTT returns smoothed_rtt, the initial RTT before any sample.
func (r *RTTStats) SmoothedRTT() time.Duration { return r.smoothed }

// RTTVar returns rttvar, half the initial RTT before any sample.
func (r *RTTStats) RTTVar() time.Duration { return r.variance }

// HasSample reports whether at least one RTT sample was taken.
func (r *RTTStats) HasSample() bool { return r.hasSample }

// FirstSampleTime returns when the first sample was taken (zero before).
func (r *RTTStats) FirstSampleTime() time.Time { return r.firstSampleAt }

// PTOBase returns smoothed_rtt + max(4*rttvar, kGranularity), the probe
// timeout before backoff and without max_ack_delay (RFC 9002 section 6.2.1).
func (r *RTTStats) PTOBase() time.Duration {
	return r.smoothed + max(4*r.variance, Granularity)
}

// LossDelay returns the time threshold for loss detection:
// 9/8 * max(smoothed_rtt, latest_rtt), at least kGranularity (RFC 9002
// section 6.1.2).
func (r *RTTStats) LossDelay() time.Duration {
	d := max(r.smoothed, r.latest)
	return max(d+d/8, Granularity)
}

// PersistentCongestionDuration returns (smoothed_rtt + max(4*rttvar,
// kGranularity) + max_ack_delay) * kPersistentCongestionThreshold
// (RFC 9002 section 7.6.1).
func (r *RTTStats) PersistentCongestionDuration() time.Duration {
	const threshold = 3
	return (r.PTOBase() + r.maxAckDelay) * threshold
}
