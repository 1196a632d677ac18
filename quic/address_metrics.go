package quic

import (
	"github.com/turboretry/turboretry/internal/metrics"
	"github.com/turboretry/turboretry/token"
)

// Token sources as metric labels; index 0 is a token whose header names
// no known source.
var tokenSourceLabels = [3]string{"unknown", "host", "agent"}

// avMetrics are the address-validation counters. Without a registry they
// are standalone, so AddressValidationStats works either way.
type avMetrics struct {
	retriesSent   *metrics.Counter
	invalidToken  *metrics.Counter // INVALID_TOKEN closes sent
	dropped       *metrics.Counter // Initials the policy dropped
	accepted      [3][3]*metrics.Counter
	rejected      [3][token.NumReasons]*metrics.Counter
	rscidMismatch [3]*metrics.Counter
	handshakes    *metrics.Gauge
	// Connection migration (RFC 9000 section 9): peers followed to a new
	// address, and validations of such an address that failed.
	pathMigrations         *metrics.Counter
	pathValidationFailures *metrics.Counter
}

// rejectLabel is the metric label of a token rejection reason.
func rejectLabel(r token.Reason) string {
	return [...]string{"none", "malformed", "unknown_source", "unknown_type", "wrong_type",
		"unknown_key", "bad_tid_mac", "from_future", "expired", "bad_tag", "bad_payload",
		"addr_mismatch", "port_mismatch"}[r]
}

func newAVMetrics(reg *metrics.Registry) (*avMetrics, error) {
	m := &avMetrics{
		retriesSent:  new(metrics.Counter),
		invalidToken: new(metrics.Counter),
		dropped:      new(metrics.Counter),
		handshakes:   new(metrics.Gauge),

		pathMigrations:         new(metrics.Counter),
		pathValidationFailures: new(metrics.Counter),
	}
	for s := range m.accepted {
		for ty := range m.accepted[s] {
			m.accepted[s][ty] = new(metrics.Counter)
		}
		for r := range m.rejected[s] {
			m.rejected[s][r] = new(metrics.Counter)
		}
		m.rscidMismatch[s] = new(metrics.Counter)
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.retriesSent, err = reg.NewCounter("turboretry_quic_retries_sent_total", "Retry packets the host sent."); err != nil {
		return nil, err
	}
	if m.invalidToken, err = reg.NewCounter("turboretry_quic_invalid_token_closes_total", "Initials with a bad retry token answered with INVALID_TOKEN."); err != nil {
		return nil, err
	}
	if m.dropped, err = reg.NewCounter("turboretry_quic_initials_dropped_total", "Client Initials the address policy dropped."); err != nil {
		return nil, err
	}
	if m.handshakes, err = reg.NewGauge("turboretry_quic_handshakes_in_flight", "Server connections whose client address is not validated yet (the load AutoRetry sees)."); err != nil {
		return nil, err
	}
	if m.pathMigrations, err = reg.NewCounter("turboretry_quic_path_migrations_total", "Clients the server followed to a new address (connection migration or NAT rebinding)."); err != nil {
		return nil, err
	}
	if m.pathValidationFailures, err = reg.NewCounter("turboretry_quic_path_validation_failures_total", "Migrations whose new address failed path validation (the server fell back to the old one)."); err != nil {
		return nil, err
	}
	acc, err := reg.NewCounterVec("turboretry_quic_tokens_accepted_total", "Valid tokens in client Initials, by source and type.", "source", "type")
	if err != nil {
		return nil, err
	}
	rej, err := reg.NewCounterVec("turboretry_quic_tokens_rejected_total", "Invalid tokens in client Initials, by source and reason.", "source", "reason")
	if err != nil {
		return nil, err
	}
	types := [3]string{"unknown", "retry", "new_token"}
	for s, sl := range tokenSourceLabels {
		for ty := 1; ty < 3; ty++ {
			if m.accepted[s][ty], err = acc.With(sl, types[ty]); err != nil {
				return nil, err
			}
		}
		for r := 1; r < int(token.NumReasons); r++ {
			if m.rejected[s][r], err = rej.With(sl, rejectLabel(token.Reason(r))); err != nil {
				return nil, err
			}
		}
		if m.rscidMismatch[s], err = rej.With(sl, "rscid_mismatch"); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// AddressValidationStats is a snapshot of a Transport's address-validation
// counters (the same values the metrics registry exports).
type AddressValidationStats struct {
	RetriesSent        uint64
	InvalidTokenCloses uint64
	InitialsDropped    uint64
	// TokensAccepted counts valid tokens by "source/type", source "host"
	// or "agent", type "retry" or "new_token"; zero counts are left out.
	TokensAccepted map[string]uint64
	// TokensRejected counts invalid tokens by "source/reason", source
	// "host", "agent" or "unknown", reason as in the metric labels
	// (docs/address-validation.md); zero counts are left out.
	TokensRejected     map[string]uint64
	HandshakesInFlight int64
	// PathMigrations counts clients followed to a new address, and
	// PathValidationFailures the new addresses that failed validation.
	PathMigrations         uint64
	PathValidationFailures uint64
}

func (m *avMetrics) snapshot() AddressValidationStats {
	st := AddressValidationStats{
		RetriesSent:        m.retriesSent.Value(),
		InvalidTokenCloses: m.invalidToken.Value(),
		InitialsDropped:    m.dropped.Value(),
		TokensAccepted:     map[string]uint64{},
		TokensRejected:     map[string]uint64{},
		HandshakesInFlight: m.handshakes.Value(),

		PathMigrations:         m.pathMigrations.Value(),
		PathValidationFailures: m.pathValidationFailures.Value(),
	}
	types := [3]string{"unknown", "retry", "new_token"}
	for s, sl := range tokenSourceLabels {
		for ty := 1; ty < 3; ty++ {
			if v := m.accepted[s][ty].Value(); v > 0 {
				st.TokensAccepted[sl+"/"+types[ty]] = v
			}
		}
		for r := 1; r < int(token.NumReasons); r++ {
			if v := m.rejected[s][r].Value(); v > 0 {
				st.TokensRejected[sl+"/"+rejectLabel(token.Reason(r))] = v
			}
		}
		if v := m.rscidMismatch[s].Value(); v > 0 {
			st.TokensRejected[sl+"/rscid_mismatch"] = v
		}
	}
	return st
}
