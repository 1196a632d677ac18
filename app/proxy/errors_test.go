package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProxyRefusedUpstream: an upstream nothing listens on gives 502,
// counted as refused, without waiting for the connect timeout (an hour
// here: a refusal mistaken for silence would hang the test).
func TestProxyRefusedUpstream(t *testing.T) {
	checkNoLeak(t)
	dead := deadUpstream(t)
	f := startFront(t, Config{Upstreams: []string{dead}, ConnectTimeout: time.Hour}, nil)
	for _, kind := range allClients {
		c := f.client(t, kind)
		resp, err := c.Get(f.URL() + "x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		closeClient(c)
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("%s: %d, want 502", kind, resp.StatusCode)
		}
	}
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": dead, "kind": "refused"}); n != 3 {
		t.Errorf("refused errors: %v, want 3", n)
	}
	if n := f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": dead}); n != 0 {
		t.Errorf("healthy gauge %v after refusals", n)
	}
	// A request's access-log line is written when its handler returns,
	// which can be after the client has the 502.
	var recs []map[string]any
	eventually(t, "an access-log line for each request", func() bool {
		recs = f.records(t)
		return len(recs) >= len(allClients)
	})
	rec := recs[len(recs)-1]
	if rec["upstream_error"] != "refused" || rec["upstream"] != dead || rec["status"] != float64(502) {
		t.Errorf("access log: %v", rec)
	}
}

// TestProxyUnixSocketGone: a unix: upstream whose socket does not exist
// gives 502 too (unreachable).
func TestProxyUnixSocketGone(t *testing.T) {
	up := "unix:/nonexistent/turboretry-test.sock"
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	resp, err := c.Get(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": up, "kind": "unreachable"}) != 1 {
		t.Errorf("%d; errors counted as unreachable: %v", resp.StatusCode, f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": up, "kind": "unreachable"}))
	}
}

// TestProxyStalledUpstream: an upstream that accepts the request and
// never answers gives 504 at the response timeout, and its request is
// cancelled.
func TestProxyStalledUpstream(t *testing.T) {
	checkNoLeak(t)
	cancelled := make(chan struct{}, 8)
	release := make(chan struct{})
	defer close(release)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-release:
		}
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}, ResponseTimeout: 100 * time.Millisecond}, nil)
	for _, kind := range allClients {
		c := f.client(t, kind)
		resp, err := c.Get(f.URL() + "slow")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		closeClient(c)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("%s: %d, want 504", kind, resp.StatusCode)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the upstream request was not cancelled", kind)
		}
	}
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": up, "kind": "timeout"}); n != 3 {
		t.Errorf("timeout errors: %v, want 3", n)
	}
	// A stall is no connection failure: the upstream stays in use.
	if n := f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": up}); n != 1 {
		t.Errorf("healthy gauge %v", n)
	}
}

// TestProxyClientCancel: a client that goes away, waiting for the
// response or in the middle of it, cancels the upstream request.
func TestProxyClientCancel(t *testing.T) {
	checkNoLeak(t)
	arrived := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/midway" {
			w.Write(bytes.Repeat([]byte("x"), 1000))
			http.NewResponseController(w).Flush()
		}
		arrived <- struct{}{}
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range allClients {
		for _, path := range []string{"waiting", "midway"} {
			c := f.client(t, kind)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", f.URL()+path, nil)
			errc := make(chan error, 1)
			go func() {
				resp, err := c.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errc <- err
			}()
			<-arrived
			cancel()
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s %s: the upstream request was not cancelled", kind, path)
			}
			if err := <-errc; err == nil {
				t.Errorf("%s %s: the request succeeded", kind, path)
			}
			closeClient(c)
		}
	}
	eventually(t, "no request in flight", func() bool {
		return f.metric(t, "turboretry_proxy_upstream_in_flight", map[string]string{"upstream": up}) == 0
	})
}

// TestProxyBodyLimit: a body past MaxBodyBytes gets 413: at once when its
// Content-Length says so (the upstream never sees it), and when a
// streamed body passes it.
func TestProxyBodyLimit(t *testing.T) {
	checkNoLeak(t)
	seen := make(chan int64, 16)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return
		}
		seen <- n
		io.WriteString(w, "ok")
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}, MaxBodyBytes: 1000}, nil)
	for _, kind := range append(allClients, clientH1) {
		c := f.client(t, kind)
		post := func(body io.Reader) int {
			resp, err := c.Post(f.URL()+"up", "text/plain", body)
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post(strings.NewReader(strings.Repeat("a", 1000))); code != 200 || <-seen != 1000 {
			t.Errorf("%s: 1000 bytes: %d", kind, code)
		}
		if code := post(strings.NewReader(strings.Repeat("a", 1001))); code != 413 {
			t.Errorf("%s: 1001 bytes with a length: %d, want 413", kind, code)
		}
		// No length: the limit stops the stream on its way.
		if code := post(io.MultiReader(strings.NewReader(strings.Repeat("a", 5000)))); code != 413 {
			t.Errorf("%s: 5000 streamed bytes: %d, want 413", kind, code)
		}
		closeClient(c)
	}
	if len(seen) != 0 {
		t.Errorf("the upstream read %d bodies past the limit", len(seen))
	}
	if n := f.metric(t, "turboretry_proxy_body_too_large_total", nil); n != 8 {
		t.Errorf("413s counted: %v, want 8", n)
	}
}

// TestProxyCountsStatuses: each response is counted under its status,
// however the statuses alternate (the last one's counter is cached).
func TestProxyCountsStatuses(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	for _, path := range []string{"ok", "missing", "ok", "ok", "missing", "ok"} {
		resp, err := c.Get(f.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for code, want := range map[string]float64{"200": 4, "404": 2} {
		if n := f.metric(t, "turboretry_proxy_upstream_requests_total", map[string]string{"upstream": up, "code": code}); n != want {
			t.Errorf("responses counted with code %s: %v, want %v", code, n, want)
		}
	}
}
