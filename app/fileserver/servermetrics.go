package fileserver

import (
	"github.com/turboretry/turboretry/internal/metrics"
)

// serverMetrics are the metrics this package maintains. The QUIC address
// validation ones (handshakes in flight, Retries, tokens accepted and
// rejected by reason) are registered by the quic package in the same
// registry.
type serverMetrics struct {
	requests  *metrics.CounterVec // protocol, method, code
	respBytes *metrics.CounterVec // protocol
	tcpConns  *metrics.Gauge
	quicConns *metrics.Gauge
}

func newServerMetrics(reg *metrics.Registry) (*serverMetrics, error) {
	var m serverMetrics
	var err error
	if m.requests, err = reg.NewCounterVec("turboretry_http_requests_total",
		"HTTP requests answered, by protocol, method and status code.", "protocol", "method", "code"); err != nil {
		return nil, err
	}
	if m.respBytes, err = reg.NewCounterVec("turboretry_http_response_bytes_total",
		"Response body bytes written, by protocol.", "protocol"); err != nil {
		return nil, err
	}
	if m.tcpConns, err = reg.NewGauge("turboretry_tcp_connections_active",
		"TCP connections currently open (HTTP/1.1 and HTTP/2)."); err != nil {
		return nil, err
	}
	if m.quicConns, err = reg.NewGauge("turboretry_quic_connections_active",
		"QUIC connections (HTTP/3) accepted and not yet closed."); err != nil {
		return nil, err
	}
	return &m, nil
}

// protocolLabel and methodLabel bound the label values to a fixed set, so
// a client cannot grow the registry by sending made-up methods.
func protocolLabel(proto string) string {
	switch proto {
	case "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/3.0":
		return proto
	}
	return "other"
}

func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}
