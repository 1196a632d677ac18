package fileserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// syncBuffer is the server's log, safe for its goroutines, with the
// records it holds.
type syncBuffer struct{ testutil.SyncBuffer }

// records parses the JSON log lines written so far.
func (s *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(s.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// testServer is a running server with its log.
type testServer struct {
	*Server
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startServer starts a server on 127.0.0.1:0 with a temporary state dir;
// mod adjusts the config first.
func startServer(t *testing.T, mod func(*Config)) *testServer {
	t.Helper()
	s, logs := newServer(t, mod)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func newServer(t *testing.T, mod func(*Config)) (*Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		Addr:     "127.0.0.1:0",
		StateDir: t.TempDir(),
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, logs
}

// stop cancels Serve and waits for it; idempotent.
func (ts *testServer) stop(t *testing.T) error {
	t.Helper()
	ts.cancel()
	err, ok := <-ts.done
	if ok {
		close(ts.done)
	}
	return err
}

// certPool returns a pool holding the server's current certificate.
func (ts *testServer) certPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ts.certs.current().Leaf)
	return pool
}

// clients returns HTTP/2 and HTTP/1.1 clients trusting the server's
// current certificate.
func (ts *testServer) clients(t *testing.T) (h2, h1 *http.Client) {
	t.Helper()
	pool := ts.certPool()
	t2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t1 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Protocols: new(http.Protocols)}
	t1.Protocols.SetHTTP1(true)
	t.Cleanup(t2.CloseIdleConnections)
	t.Cleanup(t1.CloseIdleConnections)
	return &http.Client{Transport: t2}, &http.Client{Transport: t1}
}

// get performs a request and returns the response with its body read.
func get(t *testing.T, c *http.Client, method, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// eventually polls cond until it returns nil; the bound is generous and
// only keeps a broken build from hanging.
func eventually(t *testing.T, cond func() error) {
	t.Helper()
	testutil.WaitValue(t, "the condition", 10*time.Second, cond, func(err error) bool { return err == nil })
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }
