package proxy

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Error kinds: the label of turboretry_proxy_upstream_errors_total and the
// upstream_error access-log field.
const (
	kindRefused        = "refused"         // the upstream refused the connection
	kindConnectTimeout = "connect_timeout" // no connection within ConnectTimeout
	kindUnreachable    = "unreachable"     // any other connection failure (no route, no socket, DNS)
	kindTLS            = "tls"             // the TLS handshake with the upstream failed
	kindTimeout        = "timeout"         // no response header within ResponseTimeout
	kindCanceled       = "canceled"        // the client went away
	kindBodyTooLarge   = "body_too_large"  // the request body passed MaxBodyBytes
	kindBroken         = "broken"          // the upstream closed or broke the exchange before its response header
	kindAborted        = "aborted"         // the response body failed midway
	kindQueueTimeout   = "queue_timeout"   // no connection free within QueueTimeout (MaxConnsPerUpstream)
	kindTooEarly       = "too_early"       // answered 425: not idempotent, in early data (access log only)
)

// metrics are the proxy's Prometheus metrics, labelled by upstream (as
// configured, so the label set is bounded by the configuration).
type metrics struct {
	requests   *prometheus.CounterVec   // upstream, code
	errors     *prometheus.CounterVec   // upstream, kind
	latency    *prometheus.HistogramVec // upstream
	inFlight   *prometheus.GaugeVec     // upstream
	healthy    *prometheus.GaugeVec     // upstream
	tooLarge   prometheus.Counter
	earlyData  *prometheus.CounterVec // outcome
	webSockets prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turboretry_proxy_upstream_requests_total",
			Help: "Responses received from upstreams, by upstream and status code.",
		}, []string{"upstream", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turboretry_proxy_upstream_errors_total",
			Help: "Failed upstream exchanges, by upstream and kind (refused, connect_timeout, unreachable, tls, timeout, canceled, body_too_large, broken, aborted, queue_timeout).",
		}, []string{"upstream", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "turboretry_proxy_upstream_response_seconds",
			Help:    "Time from sending a request to an upstream to its response header, by upstream.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 0.1 ms .. 26 s
		}, []string{"upstream"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "turboretry_proxy_upstream_in_flight",
			Help: "Requests sent to an upstream whose response has not ended, by upstream.",
		}, []string{"upstream"}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "turboretry_proxy_upstream_healthy",
			Help: "1 while the round robin uses an upstream, 0 while it skips it after a failed connection.",
		}, []string{"upstream"}),
		tooLarge: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turboretry_proxy_body_too_large_total",
			Help: "Requests answered 413 because their body passed the limit.",
		}),
		earlyData: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turboretry_proxy_early_data_total",
			Help: "Proxied requests that arrived in 0-RTT, by outcome (forwarded with Early-Data: 1, rejected with 425, held until the handshake completed).",
		}, []string{"outcome"}),
		webSockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turboretry_proxy_websockets_open",
			Help: "WebSockets over HTTP/3 or HTTP/2 (extended CONNECT) bridged to an upstream's HTTP/1.1 WebSocket now.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.errors, m.latency, m.inFlight, m.healthy, m.tooLarge, m.earlyData, m.webSockets} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// upstreamMetrics are the metrics of one upstream, curried.
type upstreamMetrics struct {
	requests *prometheus.CounterVec // code
	errors   *prometheus.CounterVec // kind
	latency  prometheus.Observer
	inFlight prometheus.Gauge
	healthy  prometheus.Gauge
}

func (m *metrics) forUpstream(name string) upstreamMetrics {
	l := prometheus.Labels{"upstream": name}
	um := upstreamMetrics{
		requests: m.requests.MustCurryWith(l),
		errors:   m.errors.MustCurryWith(l),
		latency:  m.latency.With(l),
		inFlight: m.inFlight.With(l),
		healthy:  m.healthy.With(l),
	}
	um.healthy.Set(1)
	return um
}

// statusText is the code label: the status, or "other" outside 100..599
// so that an upstream cannot grow the registry.
func statusText(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}
