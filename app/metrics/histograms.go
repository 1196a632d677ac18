package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/quic"
)

// QUICHistograms are the latency distributions of the QUIC listener:
// handshake duration and the Retry round trip.
type QUICHistograms struct {
	// Handshake observes each server connection's
	// ConnectionStats.HandshakeDuration once its handshake completes.
	Handshake prometheus.Histogram
	// RetryRoundTrip observes, by the token's source (host or agent), the
	// time from a Retry (its token's issue time) to the client's Initial
	// that carries the token back.
	RetryRoundTrip *prometheus.HistogramVec
}

// NewQUICHistograms creates the histograms and registers them with reg.
func NewQUICHistograms(reg prometheus.Registerer) (*QUICHistograms, error) {
	h := &QUICHistograms{
		Handshake: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "turboretry_quic_handshake_duration_seconds",
			Help:    "Server handshakes, from the first Initial to completion.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms .. 4 s
		}),
		RetryRoundTrip: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "turboretry_quic_retry_round_trip_seconds",
			Help: "From a Retry to the Initial that returned its token, by the Retry's source " +
				"(millisecond resolution: the token's timestamp).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 13), // 1 ms .. 4 s
		}, []string{"source"}),
	}
	for _, c := range []prometheus.Collector{h.Handshake, h.RetryRoundTrip} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Both sources' series exist from the start, empty.
	h.RetryRoundTrip.WithLabelValues("host")
	h.RetryRoundTrip.WithLabelValues("agent")
	return h, nil
}

// ObserveHandshake records c's handshake duration when its handshake
// completes: at once if it has, otherwise from a goroutine that waits for
// completion or the end of the connection.
func (h *QUICHistograms) ObserveHandshake(c *quic.Conn) {
	observe := func() { h.Handshake.Observe(c.ConnectionStats().HandshakeDuration.Seconds()) }
	select {
	case <-c.HandshakeComplete():
		observe()
		return
	default:
	}
	go func() {
		select {
		case <-c.HandshakeComplete():
			observe()
		case <-c.Context().Done():
		}
	}()
}

// Policy wraps an address policy so that every Initial carrying a valid
// retry token records the Retry round trip; the decision is p's. A clock
// behind the token's issuer (an agent on another machine) counts as 0.
func (h *QUICHistograms) Policy(p quic.AddressPolicy) quic.AddressPolicy {
	return func(in *quic.InitialInfo) quic.AddressDecision {
		if tk := &in.Token; tk.Valid && tk.Kind == quic.TokenRetry && (tk.Source == "host" || tk.Source == "agent") {
			h.RetryRoundTrip.WithLabelValues(tk.Source).Observe(max(time.Since(tk.IssuedAt), 0).Seconds())
		}
		return p(in)
	}
}
