// Package congestion implements QUIC congestion control: NewReno (RFC 9002
// section 7 and appendix B), CUBIC (RFC 9438), HyStart++ (RFC 9406) for
// the first slow start of both, and a pacer (RFC 9002 section 7.7).
//
// Controllers count bytes, not packets. They do not track bytes in flight:
// the loss detector (internal/recovery) owns that number and passes it in,
// so discarding a packet number space needs no controller call.
package congestion

import "time"

// DefaultMaxDatagramSize is the datagram size assumed until path MTU
// discovery raises it: the smallest size every QUIC path must carry
// (RFC 9000 section 14).
const DefaultMaxDatagramSize = 1200

// RTTSource gives a controller the connection's current RTT estimates.
// The recovery package's RTTStats implements it.
type RTTSource interface {
	// SmoothedRTT returns smoothed_rtt (the initial RTT before any sample).
	SmoothedRTT() time.Duration
	// MinRTT returns min_rtt, or 0 before any sample.
	MinRTT() time.Duration
	// LatestRTT returns latest_rtt, or 0 before any sample. HyStart++
	// watches it for a delay increase in slow start.
	LatestRTT() time.Duration
}

// Controller is a congestion controller driven by the loss detector and
// consulted by the connection before it sends.
type Controller interface {
	// OnPacketSent is called for every in-flight packet after it is sent;
	// bytesInFlight includes the packet.
	OnPacketSent(now time.Time, bytes, bytesInFlight int)
	// OnPacketAcked is called for every newly acknowledged in-flight packet,
	// after the losses the same ACK revealed were reported. priorInFlight is
	// the number of bytes in flight before the ACK was processed; it tells
	// whether the sender was limited by the window (it grows only then).
	OnPacketAcked(now, sentTime time.Time, bytes, priorInFlight int)
	// OnPacketsLost reports in-flight packets declared lost by one loss
	// detection pass. largestSentTime is the send time of the most recently
	// sent of them; it keys the congestion event (see OnCongestionEvent).
	OnPacketsLost(now, largestSentTime time.Time, lostBytes int)
	// OnCongestionEvent reduces the window once per recovery period: a
	// signal about a packet sent before the current recovery period started
	// is ignored. ECN-CE ends up here, as do losses; a reduction it makes,
	// or takes part in, is never undone by OnSpuriousLoss.
	OnCongestionEvent(now, sentTime time.Time)
	// OnSpuriousLoss reports that a packet, sent at sentTime and counted
	// with bytes in an earlier OnPacketsLost, was acknowledged after all.
	// Once every loss counted toward the latest window reduction has been
	// reported so, the controller reverts that reduction (never to a window
	// above the one it had before it) and returns true.
	OnSpuriousLoss(now, sentTime time.Time, bytes int) (undone bool)
	// OnPersistentCongestion collapses the window to the minimum window
	// (RFC 9002 section 7.6.2) and leaves the recovery period; this is
	// never undone.
	OnPersistentCongestion(now time.Time)
	// CanSend reports whether the window allows one more full-size packet.
	CanSend(bytesInFlight int) bool
	// CongestionWindow returns the congestion window in bytes.
	CongestionWindow() int
	// InSlowStart reports whether the window is below the slow start
	// threshold.
	InSlowStart() bool
	// InRecovery reports whether a recovery period is in progress: no packet
	// sent after it started has been acknowledged yet.
	InRecovery() bool
	// SetMaxDatagramSize updates the datagram size after path MTU discovery.
	// Sizes below DefaultMaxDatagramSize are ignored.
	SetMaxDatagramSize(size int)
}

// initialWindowPackets is the initial congestion window in datagrams. It
// is quic-go's, larger than the ten RFC 9002 section 7.2 suggests: a 0-RTT
// or first flight that fits in one window saves a round trip, and HyStart++
// ends slow start before a larger start can overflow a queue.
const initialWindowPackets = 32

// initialWindowDatagramSize is the smallest datagram size the initial
// window is counted in: quic-go counts it in its default initial packet
// size, 1280 bytes, so a connection starting at 1200-byte datagrams gets
// the same 40960 bytes.
const initialWindowDatagramSize = 1280

// InitialWindow returns the initial congestion window for a datagram size:
// initialWindowPackets datagrams of at least initialWindowDatagramSize
// bytes.
func InitialWindow(maxDatagramSize int) int {
	return initialWindowPackets * max(maxDatagramSize, initialWindowDatagramSize)
}

// MinimumWindow returns the smallest congestion window, two datagrams
// (RFC 9002 section 7.2).
func MinimumWindow(maxDatagramSize int) int { return 2 * maxDatagramSize }
