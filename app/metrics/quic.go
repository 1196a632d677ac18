package metrics

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/quic"
)

var (
	quicRetries        = desc("turboretry_quic_retries_sent_total", "Retry packets the host sent.")
	quicInvalidToken   = desc("turboretry_quic_invalid_token_closes_total", "Initials with a bad retry token answered with INVALID_TOKEN.")
	quicDropped        = desc("turboretry_quic_initials_dropped_total", "Client Initials the address policy dropped.")
	quicHandshakes     = desc("turboretry_quic_handshakes_in_flight", "Server connections whose client address is not validated yet (the load AutoRetry sees).")
	quicMigrations     = desc("turboretry_quic_path_migrations_total", "Clients the server followed to a new address (connection migration or NAT rebinding).")
	quicPathFailures   = desc("turboretry_quic_path_validation_failures_total", "Migrations whose new address failed path validation (the server fell back to the old one).")
	quicTokensAccepted = desc("turboretry_quic_tokens_accepted_total", "Valid tokens in client Initials, by source and type.", "source", "type")
	quicTokensRejected = desc("turboretry_quic_tokens_rejected_total", "Invalid tokens in client Initials, by source and reason.", "source", "reason")
)

// addressValidationCollector exports a Transport's address-validation
// snapshot.
type addressValidationCollector struct {
	stats func() quic.AddressValidationStats
}

// NewAddressValidationCollector exports what stats returns (typically
// quic.Transport.AddressValidationStats, or zeros while no Transport
// runs) as turboretry_quic_*. Every token series (source by type, source
// by reason) is exported, zeros included, so none appears out of nowhere.
func NewAddressValidationCollector(stats func() quic.AddressValidationStats) prometheus.Collector {
	return addressValidationCollector{stats}
}

// Token sources and types as the snapshot's keys name them ("unknown": a
// token whose header names no source).
var (
	tokenSources = []string{"host", "agent", "unknown"}
	tokenTypes   = []string{"retry", "new_token"}
	tokenReasons = quic.TokenRejectReasons()
)

func (c addressValidationCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, quicRetries, quicInvalidToken, quicDropped, quicHandshakes, quicMigrations, quicPathFailures,
		quicTokensAccepted, quicTokensRejected)
}

func (c addressValidationCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- counterOf(quicRetries, st.RetriesSent)
	ch <- counterOf(quicInvalidToken, st.InvalidTokenCloses)
	ch <- counterOf(quicDropped, st.InitialsDropped)
	ch <- gaugeOf(quicHandshakes, float64(st.HandshakesInFlight))
	ch <- counterOf(quicMigrations, st.PathMigrations)
	ch <- counterOf(quicPathFailures, st.PathValidationFailures)
	collectPairs(ch, quicTokensAccepted, st.TokensAccepted, tokenSources, tokenTypes)
	collectPairs(ch, quicTokensRejected, st.TokensRejected, tokenSources, tokenReasons)
}

// collectPairs exports a snapshot map keyed "first/second": every pair of
// the given label values, zeros included, then any other key the map has
// (a reason added to quic after this list was taken), in key order.
func collectPairs(ch chan<- prometheus.Metric, d *prometheus.Desc, m map[string]uint64, firsts, seconds []string) {
	done := make(map[string]bool, len(firsts)*len(seconds))
	for _, a := range firsts {
		for _, b := range seconds {
			k := a + "/" + b
			done[k] = true
			ch <- counterOf(d, m[k], a, b)
		}
	}
	for _, k := range sortedKeys(m) {
		if a, b, ok := strings.Cut(k, "/"); ok && !done[k] {
			ch <- counterOf(d, m[k], a, b)
		}
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
