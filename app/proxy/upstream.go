package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// upstream is one configured upstream: where it is, its connections and
// its passive health.
type upstream struct {
	name      string // as configured: the metric label and log value
	target    target
	transport *http.Transport
	m         upstreamMetrics
	// downUntil is when a failed upstream is tried again (Unix
	// nanoseconds); 0 while healthy.
	downUntil atomic.Int64
	// probeFailed is set while u fails its active health check
	// (Config.HealthPath); only a passing check clears it.
	probeFailed atomic.Bool
	// lastCode is the requests counter of the status u answered last.
	lastCode atomic.Pointer[codeCounter]
}

// codeCounter is the requests counter of one status code.
type codeCounter struct {
	code int
	c    prometheus.Counter
}

// countResponse counts a response of status code. Most responses have
// the status of the one before, whose counter is kept, so that the
// common case skips the label lookup.
func (u *upstream) countResponse(code int) {
	if cc := u.lastCode.Load(); cc != nil && cc.code == code {
		cc.c.Inc()
		return
	}
	c := u.m.requests.WithLabelValues(statusText(code))
	c.Inc()
	u.lastCode.Store(&codeCounter{code: code, c: c})
}

// healthy reports whether the round robin may pick u at now.
func (u *upstream) healthy(now int64) bool {
	return u.downUntil.Load() <= now && !u.probeFailed.Load()
}

// markDown makes the round robin skip u until now+d.
func (u *upstream) markDown(now int64, d time.Duration) {
	u.downUntil.Store(now + int64(d))
	u.m.healthy.Set(0)
}

// markUp ends a skip early: u answered. A failing health check still
// keeps u out.
func (u *upstream) markUp() {
	if u.downUntil.Load() != 0 {
		u.downUntil.Store(0)
		u.setHealthyGauge()
	}
}

// setProbeResult records a health check's outcome and reports whether it
// changed u's state.
func (u *upstream) setProbeResult(ok bool) bool {
	if u.probeFailed.Swap(!ok) == !ok {
		return false
	}
	u.setHealthyGauge()
	return true
}

func (u *upstream) setHealthyGauge() {
	if u.downUntil.Load() == 0 && !u.probeFailed.Load() {
		u.m.healthy.Set(1)
	} else {
		u.m.healthy.Set(0)
	}
}

// dialError marks an error as a failure to connect (TCP, or TLS for https
// upstreams), after which another upstream may take the request.
type dialError struct {
	err error
	tls bool // the TLS handshake failed
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// newTransport returns the connections of an upstream: net/http's
// Transport, with the connection (TCP and TLS) bounded by the connect
// timeout, no compression of its own (bodies pass through as the
// upstream sent them) and no proxy from the environment.
func newTransport(t target, cfg *Config, tlsConf *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if t.unixSocket != "" {
			network, addr = "unix", t.unixSocket
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err: err}
		}
		return c, nil
	}
	tr := &http.Transport{
		DialContext:         dial,
		ForceAttemptHTTP2:   true, // for https upstreams (ALPN h2); a custom dialer turns it off otherwise
		MaxIdleConnsPerHost: cfg.MaxIdleConnsPerUpstream,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	if t.h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	if t.url.Scheme == "https" {
		// Our own handshake, so that its failure is known as one (and
		// bounded by the same connect timeout as the dial).
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			start := time.Now()
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conf := tlsConf.Clone()
			if conf.ServerName == "" {
				conf.ServerName = t.url.Hostname()
			}
			hsCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.ConnectTimeout))
			defer cancel()
			tc := tls.Client(c, conf)
			if err := tc.HandshakeContext(hsCtx); err != nil {
				c.Close()
				return nil, &dialError{err: err, tls: true}
			}
			return tc, nil
		}
	}
	if cfg.ResponseTimeout > 0 {
		tr.ResponseHeaderTimeout = cfg.ResponseTimeout
	}
	if cfg.MaxConnsPerUpstream > 0 {
		// The Transport queues the requests that find every connection
		// busy; poolProxy.RoundTrip bounds their wait.
		tr.MaxConnsPerHost = cfg.MaxConnsPerUpstream
		tr.MaxIdleConnsPerHost = min(tr.MaxIdleConnsPerHost, cfg.MaxConnsPerUpstream)
	}
	return tr
}

// upstreamTLS returns the TLS configuration for https upstreams.
func upstreamTLS(cfg *Config) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // the operator's choice (--upstream-insecure)
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("upstream CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("upstream CA: no PEM certificate in %s", cfg.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// pool is the upstreams one route (or the default) balances over.
type pool struct {
	ups  []*upstream
	next atomic.Uint32
}

// pick returns the next upstream in round-robin order that is not in
// tried (a bit per index) and is healthy, and moves the round robin past
// it, so that skipping an unhealthy upstream does not give its turn to
// the one after it twice. When none is healthy, the first attempt takes
// the next untried one anyway, so that a request is never refused
// without trying (and an upstream that came back is found); later
// attempts give up, returning -1.
func (p *pool) pick(now int64, tried uint64, first bool) int {
	n := uint32(len(p.ups))
	for {
		cur := p.next.Load()
		j := p.find(cur%n, now, tried, first)
		if j < 0 {
			return -1
		}
		if p.next.CompareAndSwap(cur, uint32(j)+1) {
			return j
		}
	}
}

func (p *pool) find(start uint32, now int64, tried uint64, first bool) int {
	n := len(p.ups)
	fallback := -1
	for i := range n {
		j := (int(start) + i) % n
		if j < 64 && tried&(1<<j) != 0 {
			continue
		}
		if p.ups[j].healthy(now) {
			return j
		}
		if fallback < 0 {
			fallback = j
		}
	}
	if first {
		return fallback
	}
	return -1
}

// isConnectFailure reports whether err happened before the request could
// be sent: then another upstream may take it.
func isConnectFailure(err error) bool {
	var de *dialError
	return errors.As(err, &de)
}

// errQueueTimeout ends a request that waited QueueTimeout for a connection
// to an upstream at its MaxConnsPerUpstream.
var errQueueTimeout = errors.New("proxy: no upstream connection free within the queue timeout")

// roundTripQueued sends req to u whose connections are limited: a request
// that does not get a connection within the queue timeout fails with
// errQueueTimeout. It returns the cancel function to call once the
// response has ended.
func (u *upstream) roundTripQueued(req *http.Request, wait time.Duration) (*http.Response, context.CancelCauseFunc, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(wait, func() { cancel(errQueueTimeout) })
	// The wait ends with a connection free, or a new one being dialled
	// (bounded by ConnectTimeout instead).
	trace := &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { timer.Stop() },
		ConnectStart: func(string, string) { timer.Stop() },
	}
	resp, err := u.transport.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		timer.Stop()
		if context.Cause(ctx) == errQueueTimeout {
			err = errQueueTimeout
		}
		cancel(nil)
		return nil, nil, err
	}
	return resp, cancel, nil
}
