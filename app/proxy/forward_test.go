package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// headerEcho answers the request's header, host and protocol as JSON.
func headerEcho() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Seen-Host", r.Host)
		h.Set("X-Seen-Proto", r.Proto)
		h.Set("X-Seen-Method", r.Method)
		h.Set("X-Seen-Uri", r.RequestURI)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Alt-Svc", `h2=":9999"`) // the upstream's own, not ours
		w.Header().Set("Connection", "X-Upstream-Hop")
		w.Header().Set("X-Upstream-Hop", "1")
		json.NewEncoder(w).Encode(h)
	})
}

func fetchEcho(t *testing.T, c *http.Client, method, url string, hdr http.Header) (http.Header, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got http.Header
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("%s %s: %d: %v", method, url, resp.StatusCode, err)
	}
	return got, resp
}

// TestProxyForwardedFields: X-Forwarded-For, -Host, -Proto and Forwarded
// name the QUIC or TCP peer and replace what an untrusted client sent;
// Via is added both ways; hop-by-hop fields stop at the proxy; the Host
// is the client's.
func TestProxyForwardedFields(t *testing.T) {
	checkNoLeak(t)
	up := startUpstream(t, headerEcho())
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	spoofed := http.Header{
		"X-Forwarded-For":   {"6.6.6.6"},
		"X-Forwarded-Host":  {"evil.example"},
		"X-Forwarded-Proto": {"http"},
		"Forwarded":         {"for=6.6.6.6;proto=http"},
		"Via":               {"1.1 client-side-proxy"},
	}
	host := f.Addr().String()
	for _, kind := range append(allClients, clientH1) {
		t.Run(kind, func(t *testing.T) {
			c := f.client(t, kind)
			defer closeClient(c)
			hdr := spoofed.Clone()
			if kind == clientH1 {
				hdr.Set("Connection", "X-Hop")
				hdr.Set("X-Hop", "1")
				hdr.Set("Keep-Alive", "timeout=5")
			}
			got, resp := fetchEcho(t, c, "PATCH", f.URL()+"p/a%2Fb?q=1", hdr)
			major := map[string]string{clientH3: "3", clientQuicGo: "3", clientH2: "2", clientH1: "1.1"}[kind]
			want := map[string]string{
				"X-Forwarded-For":   "127.0.0.1",
				"X-Forwarded-Host":  host,
				"X-Forwarded-Proto": "https",
				"Forwarded":         fmt.Sprintf(`for=127.0.0.1;host="%s";proto=https`, host),
				"X-Seen-Host":       host,
				"X-Seen-Proto":      "HTTP/1.1",
				"X-Seen-Method":     "PATCH",
				"X-Seen-Uri":        "/p/a%2Fb?q=1",
			}
			for k, v := range want {
				if g := strings.Join(got[k], " | "); g != v {
					t.Errorf("upstream got %s: %q, want %q", k, g, v)
				}
			}
			if via := got["Via"]; len(via) != 2 || via[0] != "1.1 client-side-proxy" || via[1] != major+" turboretry" {
				t.Errorf("upstream got Via %q", via)
			}
			for _, k := range []string{"X-Hop", "Keep-Alive", "Connection"} {
				if v, ok := got[k]; ok {
					t.Errorf("hop-by-hop %s reached the upstream: %q", k, v)
				}
			}
			if v := resp.Header.Values("Via"); len(v) != 1 || v[0] != "1.1 turboretry" {
				t.Errorf("response Via %q", v)
			}
			if v := resp.Header.Values("Alt-Svc"); len(v) != 1 || strings.Contains(v[0], "9999") {
				t.Errorf("response Alt-Svc %q: want the front's only", v)
			}
			if v := resp.Header.Get("X-Upstream-Hop"); v != "" {
				t.Errorf("hop-by-hop field of the upstream reached the client: %q", v)
			}
		})
	}
}

// TestProxyTrustedForwarder: a peer in TrustForwarded keeps its
// forwarding fields, and ours are appended.
func TestProxyTrustedForwarder(t *testing.T) {
	up := startUpstream(t, headerEcho())
	f := startFront(t, Config{Upstreams: []string{up}, TrustForwarded: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	got, _ := fetchEcho(t, c, "GET", f.URL(), http.Header{
		"X-Forwarded-For":   {"192.0.2.1"},
		"X-Forwarded-Host":  {"www.example"},
		"X-Forwarded-Proto": {"https"},
		"Forwarded":         {`for="[2001:db8::1]";proto=https`},
	})
	host := f.Addr().String()
	want := map[string]string{
		"X-Forwarded-For":   "192.0.2.1, 127.0.0.1",
		"X-Forwarded-Host":  "www.example",
		"X-Forwarded-Proto": "https",
		"Forwarded":         fmt.Sprintf(`for="[2001:db8::1]";proto=https, for=127.0.0.1;host="%s";proto=https`, host),
	}
	for k, v := range want {
		if g := strings.Join(got[k], " | "); g != v {
			t.Errorf("%s: %q, want %q", k, g, v)
		}
	}
}

// TestProxyRoundRobinPassiveHealth: requests alternate over the live
// upstreams; a dead one costs one failed connection, after which its
// request goes to another upstream and it is skipped.
func TestProxyRoundRobinPassiveHealth(t *testing.T) {
	checkNoLeak(t)
	name := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, s)
		})
	}
	a := startUpstream(t, name("a"))
	b := startUnixUpstream(t, name("b"))
	dead := deadUpstream(t)
	f := startFront(t, Config{Upstreams: []string{a, dead, b}, FailTimeout: time.Hour}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	count := map[string]int{}
	for i := range 12 {
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = c.Get(f.URL())
		} else {
			resp, err = c.Post(f.URL(), "text/plain", strings.NewReader("body"))
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		count[string(body)]++
	}
	if count["a"] != 6 || count["b"] != 6 {
		t.Errorf("answers by upstream: %v, want 6 each", count)
	}
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": dead, "kind": "refused"}); n != 1 {
		t.Errorf("connections tried to the dead upstream: %v, want 1", n)
	}
	if n := f.metric(t, "turboretry_proxy_upstream_healthy", map[string]string{"upstream": dead}); n != 0 {
		t.Errorf("dead upstream's healthy gauge %v", n)
	}
}

// TestProxyRoutes: prefixes go to their upstreams (the longest match
// wins, "/api" is not "/apis"), the rest to the file server, which still
// answers GET only; the proxied paths take any method.
func TestProxyRoutes(t *testing.T) {
	checkNoLeak(t)
	tag := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s %s", s, r.Method, r.URL.Path)
		})
	}
	api := startUpstream(t, tag("api"))
	v2 := startUnixUpstream(t, tag("v2"))
	f := startFront(t, Config{Routes: []Route{{"/api", api}, {"/api/v2/", v2}}}, nil)
	for _, kind := range []string{clientH3, clientH2} {
		c := f.client(t, kind)
		for _, tc := range []struct{ method, path, want string }{
			{"POST", "/api", "api POST /api"},
			{"DELETE", "/api/x", "api DELETE /api/x"},
			{"PUT", "/api/v2/y", "v2 PUT /api/v2/y"},
			{"GET", "/api/v2", "api GET /api/v2"},
		} {
			req, _ := http.NewRequest(tc.method, strings.TrimSuffix(f.URL(), "/")+tc.path, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tc.want {
				t.Errorf("%s: %s %s: %d %q, want %q", kind, tc.method, tc.path, resp.StatusCode, body, tc.want)
			}
		}
		for _, tc := range []struct {
			method, path string
			code         int
		}{{"GET", "/", 200}, {"GET", "/apis", 404}, {"POST", "/", 405}} {
			req, _ := http.NewRequest(tc.method, strings.TrimSuffix(f.URL(), "/")+tc.path, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || (tc.code == 200 && !strings.Contains(string(body), "TurboRetry")) {
				t.Errorf("%s: %s %s (files): %d, want %d", kind, tc.method, tc.path, resp.StatusCode, tc.code)
			}
		}
		closeClient(c)
	}
}

// TestProxyUpstreamBrokenMidway: an upstream that dies in the middle of
// its response makes the client see an error, not a complete response.
func TestProxyUpstreamBrokenMidway(t *testing.T) {
	checkNoLeak(t)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 10000)))
		http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range allClients {
		c := f.client(t, kind)
		// The reset may overtake the header: then Get fails.
		resp, err := c.Get(f.URL())
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		closeClient(c)
		if err == nil {
			t.Errorf("%s: the broken response read as complete", kind)
		}
	}
	if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": up, "kind": "aborted"}); n != 3 {
		t.Errorf("aborted responses counted: %v, want 3", n)
	}
}

// TestProxyInterimAndHead: a 103 from the upstream does not end the
// response, and HEAD answers carry the upstream's length without a body.
func TestProxyInterimAndHead(t *testing.T) {
	checkNoLeak(t)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(200)
		io.WriteString(w, "hello")
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range allClients {
		c := f.client(t, kind)
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, f.URL(), nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "hello"
			if method == "HEAD" {
				want = ""
			}
			if err != nil || resp.StatusCode != 200 || string(body) != want || resp.ContentLength != 5 {
				t.Errorf("%s %s: %d, length %d, body %q, %v", kind, method, resp.StatusCode, resp.ContentLength, body, err)
			}
		}
		closeClient(c)
	}
}
