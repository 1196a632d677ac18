package proxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// healthTimeout bounds a health check, connection included.
const healthTimeout = 5 * time.Second

// healthBodyLimit is how much of a health check's response body is read
// (so that its connection can be reused); the rest is dropped with the
// connection.
const healthBodyLimit = 64 << 10

// healthChecker probes the upstreams' health path every interval and
// takes an upstream whose probe fails out of the round robin until one
// passes (Config.HealthPath). Each upstream has its own loop, so one that
// is slow to answer delays only its own checks.
type healthChecker struct {
	ups      []*upstream
	ref      *url.URL // the health path (and query)
	interval time.Duration
	h        *Handler
	stop     context.CancelFunc
	loops    sync.WaitGroup
}

// start runs the checks, the first at once, until close.
func (hc *healthChecker) start() {
	ctx, cancel := context.WithCancel(context.Background())
	hc.stop = cancel
	for _, u := range hc.ups {
		hc.loops.Go(func() { hc.run(ctx, u) })
	}
}

// close stops the checks and waits for those in progress.
func (hc *healthChecker) close() {
	hc.stop()
	hc.loops.Wait()
}

// run checks u every interval until ctx ends.
func (hc *healthChecker) run(ctx context.Context, u *upstream) {
	t := time.NewTicker(hc.interval)
	defer t.Stop()
	for {
		err := hc.probe(ctx, u)
		if ctx.Err() != nil {
			return // stopping: the probe's failure says nothing of u
		}
		if u.setProbeResult(err == nil) {
			if err != nil {
				hc.h.log.Warn("proxy: upstream failed its health check; skipping it until it passes", "upstream", u.name, "err", err)
			} else {
				hc.h.log.Info("proxy: upstream passed its health check again", "upstream", u.name)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probeError is a health check's answer that is not 2xx or 3xx.
type probeError struct{ status int }

func (e *probeError) Error() string { return "health check answered " + http.StatusText(e.status) }

// probe sends one health check to u: a GET of the health path that must
// answer 2xx or 3xx within healthTimeout.
func (hc *healthChecker) probe(ctx context.Context, u *upstream) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	// The upstream's base path is prepended, as to proxied requests.
	target := joinURL(hc.ref, u.target.url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "turboretry-health-check")
	resp, err := u.transport.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.CopyN(io.Discard, resp.Body, healthBodyLimit)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return &probeError{status: resp.StatusCode}
	}
	return nil
}
