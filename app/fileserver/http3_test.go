package fileserver

import (
	"context"
	"crypto/tls"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/fsutil"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// h3TLS returns a client TLS config that trusts the server's certificate.
func (ts *testServer) h3TLS() *tls.Config {
	return &tls.Config{RootCAs: ts.certPool()}
}

// h3Transport returns an HTTP/3 client for the server. Its handshake may
// go 30 s without a packet: the QUIC default, 5 s, is a wall-clock bound
// that CI load (the race detector, packages testing in parallel) has been
// seen to exceed ("timeout: no recent network activity" in TestQlogDir).
func (ts *testServer) h3Transport() *http3.Transport {
	return &http3.Transport{TLSClientConfig: ts.h3TLS(), QUICConfig: &quic.Config{HandshakeIdleTimeout: 30 * time.Second}}
}

// h3Fetch GETs path (without the leading slash) over HTTP/3 with tr and
// returns the access log record of that request.
func (ts *testServer) h3Fetch(t *testing.T, tr *http3.Transport, path string) map[string]any {
	t.Helper()
	if resp, _ := get(t, &http.Client{Transport: tr}, "GET", ts.URL()+path); resp.StatusCode != 200 {
		t.Fatalf("GET /%s: %d", path, resp.StatusCode)
	}
	var rec map[string]any
	eventually(t, func() error {
		for _, r := range ts.logs.records(t) {
			if r["msg"] == "request" && r["path"] == "/"+path && r["protocol"] == "HTTP/3.0" {
				rec = r
				return nil
			}
		}
		return errorf("no HTTP/3 access log record for /%s", path)
	})
	return rec
}

// checkHTTP3DemoPage fetches the demo index over HTTP/3 with c and checks
// the body and that the access log recorded protocol HTTP/3.0.
func checkHTTP3DemoPage(t *testing.T, ts *testServer, c *http.Client) {
	t.Helper()
	index, err := fs.ReadFile(DemoFS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, c, "GET", ts.URL())
	if resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" || body != string(index) {
		t.Fatalf("GET / over HTTP/3: %d %s, body of %d bytes", resp.StatusCode, resp.Proto, len(body))
	}
	if resp.Header.Get("Alt-Svc") == "" {
		t.Error("no Alt-Svc over HTTP/3")
	}
	eventually(t, func() error {
		for _, r := range ts.logs.records(t) {
			if r["msg"] == "request" && r["path"] == "/" && r["protocol"] == "HTTP/3.0" && r["status"] == float64(200) {
				return nil
			}
		}
		return errorf("no access log record with protocol HTTP/3.0")
	})
}

// TestHTTP3ReadySignal: HTTP3Ready is closed once the UDP socket serves,
// at the TCP listener's port number, and not before Serve.
func TestHTTP3ReadySignal(t *testing.T) {
	s, _ := newServer(t, nil)
	select {
	case <-s.HTTP3Ready():
		t.Fatal("HTTP3Ready closed before Serve")
	default:
	}
	if a := s.HTTP3Addr(); a != nil {
		t.Fatalf("HTTP3Addr before Serve: %v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	select {
	case <-s.HTTP3Ready():
	case err := <-done:
		done <- err
		t.Fatalf("Serve ended before HTTP/3 was ready: %v", err)
	}
	ua, ok := s.HTTP3Addr().(*net.UDPAddr)
	if !ok || ua.Port != s.Addr().(*net.TCPAddr).Port {
		t.Fatalf("HTTP3Addr %v, want UDP on the TCP port %v", s.HTTP3Addr(), s.Addr())
	}
	tr := (&testServer{Server: s}).h3Transport()
	defer tr.Close()
	resp, err := (&http.Client{Transport: tr}).Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" {
		t.Fatalf("GET over HTTP/3: %d %s", resp.StatusCode, resp.Proto)
	}
}

func TestServeHTTP3WithOurClient(t *testing.T) {
	ts := startServer(t, nil)
	tr := ts.h3Transport()
	defer tr.Close()
	checkHTTP3DemoPage(t, ts, &http.Client{Transport: tr})
	udp := strings.TrimSuffix(strings.TrimPrefix(ts.URL(), "https://"), "/")
	eventually(t, func() error {
		for _, r := range ts.logs.records(t) {
			if r["msg"] == "serving HTTP/3" && r["udp"] == udp && r["retry"] == "auto" {
				return nil
			}
		}
		return errorf("no %q record for UDP %s with retry=auto", "serving HTTP/3", udp)
	})
}

// TestServeHTTP3RetryAlways: with --retry always every HTTP/3 client is
// sent a Retry first; the access log says the connection was
// Retry-validated and the QUIC metrics count the Retry and the token.
func TestServeHTTP3RetryAlways(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Retry = RetryAlways })
	tr := ts.h3Transport()
	defer tr.Close()
	checkHTTP3DemoPage(t, ts, &http.Client{Transport: tr})
	eventually(t, func() error {
		for _, r := range ts.logs.records(t) {
			if r["msg"] == "request" && r["protocol"] == "HTTP/3.0" && r["retry_validated"] == true && r["token_validated"] == false {
				return nil
			}
		}
		return errorf("no HTTP/3 access log record with retry_validated=true")
	})
	fams := gatherMetrics(t, ts.Metrics())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_quic_connections_active", nil, 1},
		{"turboretry_quic_tokens_accepted_total", []string{"source", "host", "type", "retry"}, 1},
		{"turboretry_quic_handshakes_in_flight", nil, 0},
		// One connection: one Retry round trip (and one handshake, below).
		{"turboretry_quic_retry_round_trip_seconds", []string{"source", "host"}, 1},
	} {
		if v, ok := fams.value(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	// The listener is early: a connection can be accepted before its
	// handshake completes, and then the duration is observed from a
	// goroutine, possibly after the request was served and logged.
	eventually(t, func() error {
		const name = "turboretry_quic_handshake_duration_seconds"
		if v, ok := gatherMetrics(t, ts.Metrics()).value(name); !ok || v != 1 {
			return errorf("%s count = %v (present %v), want 1", name, v, ok)
		}
		return nil
	})
	if v, _ := fams.value("turboretry_quic_retries_sent_total"); v == 0 {
		t.Error("no Retry counted")
	}
	tr.Close() // closes the connection: the gauge goes back to 0
	eventually(t, func() error {
		if v, _ := gatherMetrics(t, ts.Metrics()).value("turboretry_quic_connections_active"); v != 0 {
			return errorf("QUIC connection gauge %v, not back to 0", v)
		}
		return nil
	})
}

// signalStore is a quic.TokenStore that signals every Put, so a test can
// wait for the server's NEW_TOKEN token to arrive.
type signalStore struct {
	quic.TokenStore
	put chan struct{}
}

func (s *signalStore) Put(key string, tok *quic.ClientToken) {
	s.TokenStore.Put(key, tok)
	select {
	case s.put <- struct{}{}:
	default:
	}
}

func (s *signalStore) waitPut(t *testing.T) {
	t.Helper()
	select {
	case <-s.put:
	case <-time.After(10 * time.Second):
		t.Fatal("no NEW_TOKEN token arrived")
	}
}

// TestReloadSecretReachesHTTP3: a client's NEW_TOKEN token lets its next
// connection skip the Retry; after the root secret file changes and the
// server reloads (SIGHUP), that client's old-secret token is refused and
// it is retried again, because the QUIC listener now uses the new secret.
func TestReloadSecretReachesHTTP3(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Retry = RetryAlways })
	store := &signalStore{TokenStore: quic.NewLRUTokenStore(4, 4), put: make(chan struct{}, 1)}
	fetch := func(path string) map[string]any {
		t.Helper()
		tr := ts.h3Transport()
		tr.QUICConfig.TokenStore = store
		defer tr.Close()
		rec := ts.h3Fetch(t, tr, path)
		store.waitPut(t)
		return rec
	}
	if r := fetch(""); r["retry_validated"] != true {
		t.Fatalf("first connection not Retry-validated: %v", r)
	}
	if r := fetch("style.css"); r["token_validated"] != true || r["retry_validated"] != false {
		t.Fatalf("second connection did not use its NEW_TOKEN token: %v", r)
	}

	secret, err := token.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteFileAtomic(ts.SecretPath(), []byte(token.FormatSecret(secret)), 0o600, true); err != nil {
		t.Fatal(err)
	}
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := fetch(".well-known/turboretry/whoami"); r["retry_validated"] != true || r["token_validated"] != false {
		t.Fatalf("after the secret reload the old token still validated: %v", r)
	}
	if v, _ := gatherMetrics(t, ts.Metrics()).value("turboretry_quic_tokens_rejected_total", "reason", "bad_tid_mac"); v == 0 {
		t.Error("no bad_tid_mac token rejection counted")
	}
}

// TestServeHTTP3ZeroRTT: a client resuming a session sends its GET in
// 0-RTT; the server accepts it and the access log says so.
func TestServeHTTP3ZeroRTT(t *testing.T) {
	// Four workers: the resumed connection usually lands on another
	// worker than the one that issued its ticket.
	ts := startServer(t, func(c *Config) { c.Retry = RetryNever; c.Workers = 4 })
	tlsConf := ts.h3TLS()
	tlsConf.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	fetch := func(path string) map[string]any {
		t.Helper()
		tr := ts.h3Transport()
		tr.TLSClientConfig = tlsConf
		defer tr.Close()
		return ts.h3Fetch(t, tr, path)
	}
	if r := fetch(""); r["zero_rtt"] != false {
		t.Fatalf("first connection logged as 0-RTT: %v", r)
	}
	// The first connection's session ticket (sent with the handshake's
	// end) is in the cache by now: the next connection resumes with 0-RTT.
	if r := fetch("style.css"); r["zero_rtt"] != true {
		t.Fatalf("resumed connection not logged as 0-RTT: %v", r)
	}
}
