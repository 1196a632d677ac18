package quic

import (
	"sync/atomic"

	"github.com/turboretry/turboretry/token"
)

// Token sources as metric labels; index 0 is a token whose header names
// no known source.
var tokenSourceLabels = [3]string{"unknown", "host", "agent"}

// avMetrics are the address-validation counters.
type avMetrics struct {
	retriesSent   *counter
	invalidToken  *counter // INVALID_TOKEN closes sent
	dropped       *counter // Initials the policy dropped
	accepted      [3][3]*counter
	rejected      [3][token.NumReasons]*counter
	rscidMismatch [3]*counter
	handshakes    *gauge
	// Connection migration (RFC 9000 section 9): peers followed to a new
	// address, and validations of such an address that failed.
	pathMigrations         *counter
	pathValidationFailures *counter
}

// rejectLabel is the metric label of a token rejection reason.
func rejectLabel(r token.Reason) string {
	return [...]string{"none", "malformed", "unknown_source", "unknown_type", "wrong_type",
		"unknown_key", "bad_tid_mac", "from_future", "expired", "bad_tag", "bad_payload",
		"addr_mismatch", "port_mismatch", "replayed"}[r]
}

// TokenRejectReasons lists the reasons AddressValidationStats.TokensRejected
// counts by, so that an exporter can show every series from the start.
func TokenRejectReasons() []string {
	rs := make([]string, 0, token.NumReasons)
	for r := 1; r < int(token.NumReasons); r++ {
		rs = append(rs, rejectLabel(token.Reason(r)))
	}
	return append(rs, "rscid_mismatch")
}

func newAVMetrics() *avMetrics {
	m := &avMetrics{
		retriesSent:  new(counter),
		invalidToken: new(counter),
		dropped:      new(counter),
		handshakes:   new(gauge),

		pathMigrations:         new(counter),
		pathValidationFailures: new(counter),
	}
	for s := range m.accepted {
		for ty := range m.accepted[s] {
			m.accepted[s][ty] = new(counter)
		}
		for r := range m.rejected[s] {
			m.rejected[s][r] = new(counter)
		}
		m.rscidMismatch[s] = new(counter)
	}
	return m
}

// counter and gauge are the atomics behind the counters; the library
// takes no metrics registry (Transport.AddressValidationStats is the
// snapshot, exported to Prometheus by the app tier).
type counter struct{ n atomic.Uint64 }

func (c *counter) Inc()          { c.n.Add(1) }
func (c *counter) Value() uint64 { return c.n.Load() }

type gauge struct{ n atomic.Int64 }

func (g *gauge) Inc()         { g.n.Add(1) }
func (g *gauge) Dec()         { g.n.Add(-1) }
func (g *gauge) Value() int64 { return g.n.Load() }

// AddressValidationStats is a snapshot of a Transport's address-validation
// counters (what app/metrics exports as turboretry_quic_*).
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

// avMetrics returns the address-validation counters of listener s, or
// nil (s nil: a client).
func (s *baseServer) avMetrics() *avMetrics {
	if s == nil || s.tokens == nil {
		return nil
	}
	return s.tokens.m
}
