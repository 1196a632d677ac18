package fileserver

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// Limits are the resource limits of the listeners, each a field of the
// quic, http3 or net/http configuration (docs/fileserver.md, "Limits",
// says what each one bounds, its default and why). DefaultLimits returns
// the defaults; Config.Limits nil means those.
type Limits struct {
	// QUIC listener (quic.Config, quic.Transport).

	// MaxConnections bounds the QUIC connections at once (handshaking or
	// established); past it a client Initial gets a stateless
	// CONNECTION_REFUSED. 0 means no limit.
	MaxConnections int
	// MaxHandshakes bounds the QUIC handshakes in progress; past it, as
	// above. 0 means no limit.
	MaxHandshakes int
	// AcceptBacklog is how many QUIC connections may wait for the HTTP/3
	// server to take them; while that many wait, new ones are refused
	// before their handshake.
	AcceptBacklog int
	// MaxStreams is the number of concurrent requests (bidirectional
	// streams) a client may open on one connection.
	MaxStreams int
	// MaxUniStreams is the number of unidirectional streams a client may
	// open at once; HTTP/3 needs three.
	MaxUniStreams int
	// HandshakeTimeout bounds a QUIC handshake (quic.Config's
	// HandshakeIdleTimeout).
	HandshakeTimeout time.Duration
	// IdleTimeout is the idle timeout the HTTP/3 listener advertises
	// (quic.Config's MaxIdleTimeout): an established connection that
	// hears nothing for this long ends. 0 means QUICIdleTimeout.
	IdleTimeout time.Duration
	// ConnSendBuffer bounds the response data one connection holds unsent
	// or unacknowledged; a handler's Write waits beyond it.
	ConnSendBuffer uint64
	// SendBuffer and ReceiveBuffer are the Transport's budgets for all
	// connections: unacknowledged response data (Write waits beyond it)
	// and received, unread request data (receive windows stop growing).
	SendBuffer, ReceiveBuffer uint64
	// RetryThreshold and UnvalidatedBudget tune --retry auto: Retries are
	// sent while more than RetryThreshold connections are unvalidated or
	// they hold more than UnvalidatedBudget bytes.
	RetryThreshold    int
	UnvalidatedBudget int64
	// Admission by client source prefix (quic.AdmissionConfig): with
	// PrefixAdmission, under pressure each IPv4 /PrefixLen4 and IPv6
	// /PrefixLen6 is held to a fair share of MaxConnections and
	// MaxHandshakes, opens at most PrefixRate new connections per second
	// (bursts of PrefixBurst; rate 0: no rate limit), ReturningReserve of
	// the limits is kept for clients with a NEW_TOKEN token, and at most
	// MaxPrefixes prefixes are tracked.
	PrefixAdmission        bool
	PrefixLen4, PrefixLen6 int
	PrefixRate             float64
	PrefixBurst            int
	ReturningReserve       float64
	MaxPrefixes            int

	// HTTP layer.

	// MaxHeaderBytes bounds a request's header section, on HTTP/3 and on
	// HTTPS; a larger one gets 431.
	MaxHeaderBytes int
	// ConnHeaderBytes bounds the header sections being read on one HTTP/3
	// connection at once; at least MaxHeaderBytes.
	ConnHeaderBytes int
	// HeaderTimeout bounds the wait for a request's header section, on
	// HTTP/3 and on HTTPS. 0 disables it.
	HeaderTimeout time.Duration
	// UniStreamTimeout bounds the wait for the type of an HTTP/3 client's
	// unidirectional stream and for its SETTINGS. 0 disables it.
	UniStreamTimeout time.Duration
	// WriteStallTimeout bounds how long an HTTP/3 response write may wait
	// for a client that does not read. 0 disables it.
	WriteStallTimeout time.Duration
}

// DefaultLimits returns the limits serve runs with unless told otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxConnections:    4096,
		MaxHandshakes:     256,
		AcceptBacklog:     128,
		MaxStreams:        100,
		MaxUniStreams:     16,
		HandshakeTimeout:  5 * time.Second,
		IdleTimeout:       QUICIdleTimeout,
		ConnSendBuffer:    16 << 20,
		SendBuffer:        256 << 20,
		ReceiveBuffer:     256 << 20,
		RetryThreshold:    quic.DefaultRetryThreshold,
		UnvalidatedBudget: quic.DefaultUnvalidatedBudget,
		PrefixAdmission:   true,
		PrefixLen4:        24,
		PrefixLen6:        56,
		PrefixRate:        50,
		PrefixBurst:       100,
		ReturningReserve:  0.125,
		MaxPrefixes:       4096,
		MaxHeaderBytes:    64 << 10,
		ConnHeaderBytes:   128 << 10,
		HeaderTimeout:     10 * time.Second,
		UniStreamTimeout:  http3.DefaultUniStreamTimeout,
		WriteStallTimeout: http3.DefaultWriteStallTimeout,
	}
}

// minUniStreams are the unidirectional streams an HTTP/3 client opens:
// control, QPACK encoder and decoder.
const minUniStreams = 3

// Check reports the first limit that makes no sense.
func (l *Limits) Check() error {
	switch {
	case l.MaxConnections < 0 || l.MaxHandshakes < 0:
		return errors.New("limits: negative connection or handshake limit (0 means none)")
	case l.AcceptBacklog < 1:
		return errors.New("limits: the accept backlog must be at least 1")
	case l.MaxStreams < 1:
		return errors.New("limits: at least 1 stream per connection is needed for a request")
	case l.MaxUniStreams < minUniStreams:
		return fmt.Errorf("limits: HTTP/3 clients need %d unidirectional streams, got %d", minUniStreams, l.MaxUniStreams)
	case l.HandshakeTimeout <= 0:
		return errors.New("limits: the handshake timeout must be positive")
	case l.IdleTimeout < 0:
		return errors.New("limits: negative idle timeout (0 means the default)")
	case l.ConnSendBuffer == 0 || l.SendBuffer == 0 || l.ReceiveBuffer == 0:
		return errors.New("limits: send and receive buffers must be positive")
	case l.RetryThreshold < 0 || l.UnvalidatedBudget <= 0:
		return errors.New("limits: negative retry threshold or non-positive unvalidated budget")
	case l.PrefixLen4 < 1 || l.PrefixLen4 > 32 || l.PrefixLen6 < 1 || l.PrefixLen6 > 128:
		return fmt.Errorf("limits: source prefix lengths /%d and /%d: want 1..32 for IPv4, 1..128 for IPv6", l.PrefixLen4, l.PrefixLen6)
	case l.PrefixRate < 0 || l.PrefixBurst < 0 || math.IsNaN(l.PrefixRate) || math.IsInf(l.PrefixRate, 0):
		return errors.New("limits: the prefix rate and burst must be finite and not negative (rate 0: no rate limit; burst 0: twice the rate)")
	case !(l.ReturningReserve >= 0 && l.ReturningReserve < 1):
		return errors.New("limits: the reserve for returning clients is a fraction of the limits, from 0 to under 1")
	case l.MaxPrefixes < 1:
		return errors.New("limits: at least 1 source prefix must be tracked")
	case l.MaxHeaderBytes <= 0:
		return errors.New("limits: the header size limit must be positive")
	case l.ConnHeaderBytes < l.MaxHeaderBytes:
		return fmt.Errorf("limits: the per-connection header budget (%d) must hold one header section of the maximum size (%d)", l.ConnHeaderBytes, l.MaxHeaderBytes)
	case l.HeaderTimeout < 0 || l.UniStreamTimeout < 0 || l.WriteStallTimeout < 0:
		return errors.New("limits: negative timeout (0 disables one)")
	}
	return nil
}

// noneIfZero maps "0 means none" to the libraries' "negative means none"
// (for them 0 means their default).
func noneIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// share is the part of a server-wide limit that each of n workers
// enforces: rounded up, so the workers together allow at least the limit,
// and 0 (none) stays 0.
func share[T int | int64 | uint64](v T, n int) T {
	if v == 0 || n <= 1 {
		return v
	}
	return (v + T(n) - 1) / T(n)
}

// perWorker returns the limits one of n workers enforces. The QUIC limits
// are per quic.Transport and every worker has its own, so each takes its
// share of the server-wide value (reuseport spreads clients evenly over
// the workers); the HTTP/3 limits belong to the one http3.Server and stay.
func (l Limits) perWorker(n int) Limits {
	l.MaxConnections = share(l.MaxConnections, n)
	l.MaxHandshakes = share(l.MaxHandshakes, n)
	l.AcceptBacklog = share(l.AcceptBacklog, n)
	l.SendBuffer = share(l.SendBuffer, n)
	l.ReceiveBuffer = share(l.ReceiveBuffer, n)
	l.RetryThreshold = share(l.RetryThreshold, n)
	l.UnvalidatedBudget = share(l.UnvalidatedBudget, n)
	// A prefix's connections hash over the workers like anyone's.
	if n > 1 {
		l.PrefixRate /= float64(n)
	}
	l.PrefixBurst = share(l.PrefixBurst, n)
	l.MaxPrefixes = share(l.MaxPrefixes, n)
	return l
}

// quicConfig returns the HTTP/3 listener's QUIC configuration.
func (l *Limits) quicConfig() *quic.Config {
	return &quic.Config{
		Allow0RTT:               true, // the HTTP/3 client sends only safe, bodiless requests early
		MaxIdleTimeout:          l.idleTimeout(),
		HandshakeIdleTimeout:    l.HandshakeTimeout,
		MaxIncomingStreams:      int64(l.MaxStreams),
		MaxIncomingUniStreams:   int64(l.MaxUniStreams),
		MaxConnections:          noneIfZero(l.MaxConnections),
		MaxHandshakes:           noneIfZero(l.MaxHandshakes),
		AcceptBacklog:           l.AcceptBacklog,
		MaxConnectionSendBuffer: l.ConnSendBuffer,
		Admission:               l.admission(),
	}
}

// idleTimeout returns the listener's idle timeout: IdleTimeout, or
// QUICIdleTimeout when it is 0.
func (l *Limits) idleTimeout() time.Duration {
	if l.IdleTimeout == 0 {
		return QUICIdleTimeout
	}
	return l.IdleTimeout
}

// admission returns the QUIC listener's admission by source prefix, nil
// when off.
func (l *Limits) admission() *quic.AdmissionConfig {
	if !l.PrefixAdmission {
		return nil
	}
	reserve := l.ReturningReserve
	if reserve == 0 {
		reserve = -1 // quic's "none"; its 0 is the default
	}
	return &quic.AdmissionConfig{
		IPv4PrefixLen:      l.PrefixLen4,
		IPv6PrefixLen:      l.PrefixLen6,
		NewConnectionRate:  l.PrefixRate,
		NewConnectionBurst: l.PrefixBurst,
		ReturningReserve:   reserve,
		MaxPrefixes:        l.MaxPrefixes,
	}
}

// applyTransport sets the Transport's budgets.
func (l *Limits) applyTransport(tr *quic.Transport) {
	tr.MaxSendBuffer, tr.MaxReceiveBuffer = l.SendBuffer, l.ReceiveBuffer
}

// applyHTTP3 sets the HTTP/3 server's limits.
func (l *Limits) applyHTTP3(srv *http3.Server) {
	srv.MaxHeaderBytes = l.MaxHeaderBytes
	srv.MaxConnHeaderBytes = l.ConnHeaderBytes
	srv.ReadHeaderTimeout = noneIfZero(l.HeaderTimeout)
	srv.UniStreamTimeout = noneIfZero(l.UniStreamTimeout)
	srv.WriteStallTimeout = noneIfZero(l.WriteStallTimeout)
}

// addressPolicy maps --retry to the QUIC listener's address-validation
// policy: always and never as said, auto sends Retries only while more
// connections are unvalidated than the threshold, or they hold more than
// the budget (flood protection at no cost to clients in calm times).
func (l *Limits) addressPolicy(m RetryMode) quic.AddressPolicy {
	switch m {
	case RetryAlways:
		return quic.AlwaysRetry()
	case RetryNever:
		return quic.NeverRetry()
	}
	return quic.AutoRetryBudget(l.RetryThreshold, l.UnvalidatedBudget)
}
