// Package testhook holds knobs that only tests turn, to make behaviour
// that is rare at the defaults happen often enough to observe: key updates
// every few packets instead of near the AEAD limit, a small DATAGRAM frame
// limit. quic-go's integration tests lower the same quic-go internals
// (handshake.SetKeyUpdateInterval, wire.MaxDatagramSize); the drop-in
// suite (internal/dropin, docs/dropin.md) maps those to these. Its
// rewritten tests live in a module of quic-go's path, which Go does not
// let import this package, so they reach it by go:linkname; keep the
// names and signatures below as they are, or update internal/dropin's
// hook shim with them.
//
// Production code reads the knobs; nothing outside tests sets them.
package testhook

import "sync/atomic"

var keyUpdateInterval atomic.Uint64

// SetKeyUpdateInterval makes every connection initiate a 1-RTT key
// update once it has sent n packets with its current keys, as soon as
// RFC 9001 section 6 allows one (handshake confirmed, a packet of the
// current key phase acknowledged), instead of only near the AEAD
// confidentiality limit. 0 restores the default. It returns a function
// that restores the previous interval.
func SetKeyUpdateInterval(n uint64) (reset func()) {
	old := keyUpdateInterval.Swap(n)
	return func() { keyUpdateInterval.Store(old) }
}

// KeyUpdateInterval is the interval SetKeyUpdateInterval set, 0 when
// none is set.
func KeyUpdateInterval() uint64 { return keyUpdateInterval.Load() }

// MaxDatagramFrameSize, when not 0, replaces the max_datagram_frame_size
// transport parameter (RFC 9221) a connection with datagrams enabled
// announces: the largest DATAGRAM frame its peer may send. It is read when
// a connection starts; set it only while none is starting (as quic-go's
// wire.MaxDatagramSize).
var MaxDatagramFrameSize uint64
