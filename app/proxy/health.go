package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

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
	timeout  time.Duration // of one check, connection included
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
		if errors.Is(err, errProbeQueued) {
			// Every connection allowed to u is busy: u is loaded, not
			// known to be unwell; its state stays.
			hc.h.log.Debug("proxy: health check found no free connection", "upstream", u.name)
		} else if u.setProbeResult(err == nil) {
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

// errProbeQueued is a health check that timed out waiting for a
// connection under Config.MaxConnsPerUpstream.
var errProbeQueued = errors.New("proxy: health check found every upstream connection busy")

// probeError is a health check's answer that is not 2xx or 3xx.
type probeError struct{ status int }

func (e *probeError) Error() string { return "health check answered " + http.StatusText(e.status) }

// probe sends one health check to u: a GET of the health path that must
// answer 2xx or 3xx within the timeout.
func (hc *healthChecker) probe(ctx context.Context, u *upstream) error {
	ctx, cancel := context.WithTimeout(ctx, hc.timeout)
	defer cancel()
	// The upstream's base path is prepended, as to proxied requests.
	target := joinURL(hc.ref, u.target.url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "turboretry-health-check")
	var connected atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { connected.Store(true) },
		ConnectStart: func(string, string) { connected.Store(true) },
	}))
	resp, err := u.transport.RoundTrip(req)
	if err != nil {
		if !connected.Load() && hc.h.cfg.MaxConnsPerUpstream > 0 && ctx.Err() != nil {
			return errProbeQueued
		}
		return err
	}
	_, _ = io.CopyN(io.Discard, resp.Body, healthBodyLimit)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return &probeError{status: resp.StatusCode}
	}
	return nil
}
