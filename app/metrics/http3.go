package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/http3"
)

var (
	h3ConnsAccepted  = desc("turboretry_http3_connections_accepted_total", "QUIC connections the HTTP/3 server served.")
	h3ConnsActive    = desc("turboretry_http3_connections_active", "HTTP/3 connections open now.")
	h3Requests       = desc("turboretry_http3_requests_total", "HTTP/3 request streams accepted.")
	h3RequestsActive = desc("turboretry_http3_requests_active", "HTTP/3 requests being handled now.")
	h3HeaderBytes    = desc("turboretry_http3_header_bytes_reserved", "Header budget reserved now by request header sections being read.")
	h3HandlerPanics  = desc("turboretry_http3_handler_panics_total", "Handler panics recovered (each reset its stream and was logged).")
	h3Refused        = desc("turboretry_http3_refused_total", "Requests, streams and connections the HTTP/3 server refused or dropped, by reason.", "reason")
)

// http3Collector exports an HTTP/3 server's snapshot.
type http3Collector struct {
	stats func() http3.ServerStats
}

// NewHTTP3Collector exports what stats returns (typically
// http3.Server.Stats, or zeros while no server runs) as turboretry_http3_*,
// every refusal reason from the start.
func NewHTTP3Collector(stats func() http3.ServerStats) prometheus.Collector {
	return http3Collector{stats}
}

func (c http3Collector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, h3ConnsAccepted, h3ConnsActive, h3Requests, h3RequestsActive, h3HeaderBytes, h3HandlerPanics, h3Refused)
}

func (c http3Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- counterOf(h3ConnsAccepted, st.ConnsAccepted)
	ch <- gaugeOf(h3ConnsActive, float64(st.ConnsActive))
	ch <- counterOf(h3Requests, st.Requests)
	ch <- gaugeOf(h3RequestsActive, float64(st.RequestsActive))
	ch <- gaugeOf(h3HeaderBytes, float64(st.HeaderBytesReserved))
	ch <- counterOf(h3HandlerPanics, st.HandlerPanics)
	for r := range http3.NumRefusals {
		ch <- counterOf(h3Refused, st.Refused[r], r.String())
	}
}
