package fileserver

import (
	"github.com/prometheus/client_golang/prometheus"

	appmetrics "github.com/turboretry/turboretry/app/metrics"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/quic"
)

// serverMetrics are the metrics this package maintains; the QUIC
// listener's and the offload's are collected from their snapshots at
// scrape time (registerCollectors).
type serverMetrics struct {
	requests  *prometheus.CounterVec   // protocol, method, code
	respBytes *prometheus.CounterVec   // protocol
	duration  *prometheus.HistogramVec // protocol
	tcpConns  prometheus.Gauge
	quicConns prometheus.Gauge
	quic      *appmetrics.QUICHistograms
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turboretry_http_requests_total",
			Help: "HTTP requests answered, by protocol, method and status code.",
		}, []string{"protocol", "method", "code"}),
		respBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turboretry_http_response_bytes_total",
			Help: "Response body bytes written, by protocol.",
		}, []string{"protocol"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "turboretry_http_request_duration_seconds",
			Help:    "Time from a request's headers to the end of its response, by protocol.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 0.1 ms .. 26 s
		}, []string{"protocol"}),
		tcpConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turboretry_tcp_connections_active",
			Help: "TCP connections currently open (HTTP/1.1 and HTTP/2).",
		}),
		quicConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turboretry_quic_connections_active",
			Help: "QUIC connections (HTTP/3) accepted and not yet closed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.respBytes, m.duration, m.tcpConns, m.quicConns} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	if m.quic, err = appmetrics.NewQUICHistograms(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// registerCollectors adds the collectors over the HTTP/3 listener's
// snapshots: its Transport's address validation, load and shed load, its
// HTTP/3 server's counters, and its offload.
func (s *Server) registerCollectors() error {
	for _, c := range []prometheus.Collector{
		appmetrics.NewAddressValidationCollector(s.h3.addressValidationStats),
		appmetrics.NewTransportCollector(s.h3.transportStats),
		appmetrics.NewHTTP3Collector(s.h3.serverStats),
		appmetrics.NewOffloadCollector(s.h3.offloadStats),
		appmetrics.NewReuseportCollector(s.h3.reuseportStats),
	} {
		if err := s.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// transports returns the workers' Transports, nil before Serve bound them.
func (l *http3Listener) transports() []*quic.Transport {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.workers == nil {
		return nil
	}
	return l.workers.Transports
}

// addressValidationStats is the sum of the workers' Transports'
// snapshots, zeros before Serve bound them.
func (l *http3Listener) addressValidationStats() quic.AddressValidationStats {
	var sum quic.AddressValidationStats
	for _, tr := range l.transports() {
		addStats(&sum, tr.AddressValidationStats())
	}
	return sum
}

// serverStats is the HTTP/3 server's snapshot, zeros before Serve made
// it.
func (l *http3Listener) serverStats() http3.ServerStats {
	l.mu.Lock()
	srv := l.srv
	l.mu.Unlock()
	if srv == nil {
		return http3.ServerStats{}
	}
	return srv.Stats()
}

// transportStats is the sum of the workers' Transports' load and
// shed-load snapshots, zeros before Serve bound them.
func (l *http3Listener) transportStats() quic.TransportStats {
	var sum quic.TransportStats
	for _, tr := range l.transports() {
		addStats(&sum, tr.Stats())
	}
	return sum
}

// reuseportStats is the steering program's snapshot and the group's
// shape; ok is false before Serve bound the sockets.
func (l *http3Listener) reuseportStats() (st appmetrics.ReuseportSnapshot, ok bool, err error) {
	l.mu.Lock()
	w := l.workers
	l.mu.Unlock()
	if w == nil {
		return st, false, nil
	}
	st.Workers, st.Mode = w.Group.Workers(), w.Group.Mode()
	st.Stats, err = w.Group.Stats()
	return st, true, err
}

// offloadStats is the running offload's snapshot; ok is false when none
// runs.
func (l *http3Listener) offloadStats() (st host.Stats, ok bool, err error) {
	o := l.offload()
	if o == nil {
		return st, false, nil
	}
	st, err = o.Stats()
	return st, true, err
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
