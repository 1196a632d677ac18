package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// TestProxyActiveHealthCheck: an upstream whose health path answers 503
// gets no requests while it does, the other one takes them all, and once
// its checks pass again the round robin sends it its share.
func TestProxyActiveHealthCheck(t *testing.T) {
	checkNoLeak(t)
	type app struct {
		sick     atomic.Bool
		served   atomic.Int64 // requests other than health checks
		checks   atomic.Int64
		badProbe atomic.Value // a health check not as sent by the proxy
	}
	newApp := func(name string) (*app, string) {
		a := &app{}
		url := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/base/healthz" {
				a.checks.Add(1)
				if r.Method != http.MethodGet || r.URL.RawQuery != "deep=1" || r.Header.Get("User-Agent") != "turboretry-health-check" {
					a.badProbe.Store(r.Method + " " + r.URL.String() + " " + r.Header.Get("User-Agent"))
				}
				if a.sick.Load() {
					http.Error(w, "sick", http.StatusServiceUnavailable)
				}
				return
			}
			a.served.Add(1)
			io.WriteString(w, name)
		}))
		return a, url + "/base"
	}
	a, upA := newApp("a")
	b, upB := newApp("b")
	b.sick.Store(true)
	f := startFront(t, Config{Upstreams: []string{upA, upB}, HealthPath: "/healthz?deep=1", HealthInterval: 10 * time.Millisecond}, nil)
	healthy := func(up string) float64 {
		return f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": up})
	}
	eventually(t, "b's failed health check", func() bool { return healthy(upB) == 0 })
	if healthy(upA) != 1 {
		t.Fatalf("a's healthy gauge %v", healthy(upA))
	}
	c := f.client(t, clientH3)
	defer closeClient(c)
	get := func() string {
		t.Helper()
		resp, err := c.Get(f.URL() + "x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		return string(body)
	}
	for i := range 6 {
		if got := get(); got != "a" {
			t.Fatalf("request %d answered by %q while b fails its health check", i, got)
		}
	}
	if n := b.served.Load(); n != 0 {
		t.Fatalf("b served %d requests while failing its health check", n)
	}

	b.sick.Store(false)
	eventually(t, "b's passed health check", func() bool { return healthy(upB) == 1 })
	seen := map[string]int{}
	for range 4 {
		seen[get()]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("after b recovered: %v, want 2 each", seen)
	}
	for name, x := range map[string]*app{"a": a, "b": b} {
		if x.checks.Load() == 0 {
			t.Errorf("%s got no health check", name)
		}
		if v := x.badProbe.Load(); v != nil {
			t.Errorf("%s got a health check %v", name, v)
		}
	}
}

// TestProxyHealthCheckUnreachable: an upstream that cannot be connected
// to fails its check as one that answers badly does.
func TestProxyHealthCheckUnreachable(t *testing.T) {
	checkNoLeak(t)
	dead := deadUpstream(t)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	f := startFront(t, Config{Upstreams: []string{up, dead}, HealthPath: "/", HealthInterval: 10 * time.Millisecond}, nil)
	eventually(t, "the dead upstream's failed check", func() bool {
		return f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": dead}) == 0
	})
	c := f.client(t, clientH3)
	defer closeClient(c)
	for range 4 {
		resp, err := c.Get(f.URL())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// The round robin never tried the dead one: no refusal counted.
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": dead, "kind": "refused"}); n != 0 {
		t.Errorf("%v requests sent to the upstream failing its checks", n)
	}
}

// TestProxyHealthCheckBusyPool: a health check that finds the only
// connection MaxConnsPerUpstream allows busy until its timeout leaves the
// upstream in the round robin: it is loaded, not known to be unwell.
func TestProxyHealthCheckBusyPool(t *testing.T) {
	checkNoLeak(t)
	release := make(chan struct{})
	up, cc := startCountedUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	// The timeout also bounds the checks that do get the connection (at
	// the start, before the held request): one running past it marks the
	// upstream down, so it is ample for a loaded machine.
	f := startFront(t, Config{Upstreams: []string{up}, MaxConnsPerUpstream: 1,
		HealthPath: "/health", HealthInterval: 10 * time.Millisecond, HealthTimeout: time.Second}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	held := make(chan error, 1)
	go func() {
		resp, err := c.Get(f.URL() + "held")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = &statusError{resp.StatusCode, ""}
			}
		}
		held <- err
	}()
	eventually(t, "the upstream holding the request", func() bool { return cc.handling.Load() == 1 })
	eventually(t, "health checks that found no connection", func() bool {
		return strings.Count(f.logs.String(), "health check found no free connection") >= 3
	})
	if got := f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": up}); got != 1 {
		t.Errorf("healthy gauge %v while the upstream's only connection is busy, want 1", got)
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("held request: %v", err)
	}
}

// connCounter counts an upstream server's connections: opened in all, and
// requests being handled at once.
type connCounter struct {
	opened   atomic.Int64
	handling atomic.Int64
	mostBusy atomic.Int64
}

func (cc *connCounter) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		cc.opened.Add(1)
	}
}

func (cc *connCounter) enter() {
	n := cc.handling.Add(1)
	for {
		m := cc.mostBusy.Load()
		if n <= m || cc.mostBusy.CompareAndSwap(m, n) {
			return
		}
	}
}

// startCountedUpstream serves h over plain HTTP on the loopback, counting
// its connections.
func startCountedUpstream(t *testing.T, h http.Handler) (string, *connCounter) {
	t.Helper()
	cc := &connCounter{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnState: cc.connState,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cc.enter()
			defer cc.handling.Add(-1)
			h.ServeHTTP(w, r)
		})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String(), cc
}

// TestProxyUpstreamConnLimit: with MaxConnsPerUpstream 2, six requests at
// once to an upstream that holds its answers get two connections between
// them: four wait in the queue (in flight at the proxy, not at the
// upstream), and all six complete once the upstream answers.
func TestProxyUpstreamConnLimit(t *testing.T) {
	checkNoLeak(t)
	const limit, requests = 2, 6
	release := make(chan struct{})
	up, cc := startCountedUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "done")
	}))
	f := startFront(t, Config{Upstreams: []string{up}, MaxConnsPerUpstream: limit, QueueTimeout: time.Hour}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Go(func() {
			resp, err := c.Get(f.URL() + "slow")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(body) != "done" {
				errs <- &statusError{resp.StatusCode, string(body)}
			}
		})
	}
	eventually(t, "every request in flight at the proxy", func() bool {
		return f.metric(t, "turboretry_proxy_upstream_in_flight", map[string]string{"upstream": up}) == requests
	})
	eventually(t, "the upstream holding the limit's requests", func() bool { return cc.handling.Load() == limit })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := cc.opened.Load(); n > limit {
		t.Errorf("%d upstream connections opened, limit %d", n, limit)
	}
	if n := cc.mostBusy.Load(); n > limit {
		t.Errorf("%d requests at the upstream at once, limit %d", n, limit)
	}
}

// TestProxyUpstreamQueueTimeout: a request that finds the upstream's only
// allowed connection busy for longer than QueueTimeout is answered 503,
// logged and counted as queue_timeout, while the busy one completes.
func TestProxyUpstreamQueueTimeout(t *testing.T) {
	checkNoLeak(t)
	release := make(chan struct{})
	up, cc := startCountedUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "done")
	}))
	f := startFront(t, Config{Upstreams: []string{up}, MaxConnsPerUpstream: 1, QueueTimeout: 300 * time.Millisecond}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	first := make(chan error, 1)
	go func() {
		resp, err := c.Get(f.URL() + "held")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "done" {
				err = &statusError{resp.StatusCode, string(body)}
			}
		}
		first <- err
	}()
	eventually(t, "the upstream holding the first request", func() bool { return cc.handling.Load() == 1 })
	resp, err := c.Get(f.URL() + "queued")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("queued request: %d, want 503", resp.StatusCode)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first request: %v", err)
	}
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": up, "kind": "queue_timeout"}); n != 1 {
		t.Errorf("queue_timeout errors: %v, want 1", n)
	}
	// The 503's access-log line is written when its handler returns,
	// which can be after the client has the answer.
	testutil.WaitValue(t, "an access-log line with upstream_error=queue_timeout and status 503", 10*time.Second, f.logs.String,
		func(string) bool {
			for _, r := range f.records(t) {
				if r["upstream_error"] == "queue_timeout" && r["status"] == float64(503) {
					return true
				}
			}
			return false
		})
	if n := cc.opened.Load(); n != 1 {
		t.Errorf("%d upstream connections, limit 1", n)
	}
}

// statusError is an unexpected answer.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + ": " + e.body }
