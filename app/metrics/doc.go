// Package metrics exports TurboRetry's counters to Prometheus through
// client_golang, in the app tier: the libraries (quic, http3, offload/*)
// take no registry and expose plain snapshot structs, and the collectors
// here turn each snapshot into metrics at scrape time.
//
//   - NewRegistry: a registry with the go_* and process_* collectors.
//   - Handler: /metrics for a registry (text format or OpenMetrics by
//     content negotiation; GET and HEAD only).
//   - NewAddressValidationCollector: quic.Transport.AddressValidationStats
//     as turboretry_quic_*.
//   - NewOffloadCollector: offload/host's Stats, the integrated datapath's
//     turboretry_agent_*, turboretry_xdp_packets_total and
//     turboretry_afxdp_frames_total, or the split-mode announcer's
//     turboretry_split_announce*.
//   - NewSplitAgentCollector: offload/split's Stats for turboretry agent:
//     the datapath's metrics plus turboretry_split_host_frames_total,
//     turboretry_split_admit_failed_total and turboretry_announce_*.
//   - QUICHistograms: turboretry_quic_handshake_duration_seconds and
//     turboretry_quic_retry_round_trip_seconds, fed from
//     quic.ConnectionStats.HandshakeDuration and quic.TokenInfo.IssuedAt.
//
// The metric names are listed in docs/observability.md, and
// docs/grafana-dashboard.json queries only names these collectors export
// (checked by app/fileserver's TestDashboardQueriesExported).
package metrics
