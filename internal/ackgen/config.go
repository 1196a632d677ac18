package ackgen

import "time"

// Defaults used when a Config field is zero.
const (
	// DefaultMaxAckDelay is the max_ack_delay default of RFC 9000 section 18.2.
	DefaultMaxAckDelay = 25 * time.Millisecond
	// DefaultAckElicitingThreshold follows the "at least every second
	// ack-eliciting packet" advice of RFC 9000 section 13.2.2.
	DefaultAckElicitingThreshold = 2
	// DefaultMaxRanges bounds the ranges remembered; an ACK frame with 32
	// ranges still fits easily in one packet.
	DefaultMaxRanges = 32
)

// MaxPacketNumber is the largest packet number QUIC can carry (2^62-1).
const MaxPacketNumber = 1<<62 - 1

// Config tunes a Tracker. The zero value gives the defaults above.
type Config struct {
	// MaxAckDelay is how long an ACK for application data may be held back;
	// it must not exceed the max_ack_delay transport parameter we advertised.
	MaxAckDelay time.Duration
	// AckElicitingThreshold is the number of ack-eliciting 1-RTT packets
	// after which an ACK is sent without waiting for the timer.
	AckElicitingThreshold int
	// MaxRanges is how many disjoint ranges are remembered. When a new
	// range would exceed it, the oldest (lowest) range is forgotten.
	MaxRanges int
}

func (c Config) withDefaults() Config {
	if c.MaxAckDelay <= 0 {
		c.MaxAckDelay = DefaultMaxAckDelay
	}
	if c.AckElicitingThreshold <= 0 {
		c.AckElicitingThreshold = DefaultAckElicitingThreshold
	}
	if c.MaxRanges <= 0 {
		c.MaxRanges = DefaultMaxRanges
	}
	return c
}
