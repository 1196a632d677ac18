package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer = testutil.SyncBuffer

// front is turboretry's server with the proxy as its handler: HTTP/3
// and HTTPS on one port of the loopback.
type front struct {
	*fileserver.Server
	logs   *syncBuffer
	pool   *x509.CertPool
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startFront starts the server with cfg's proxy; mod adjusts the server
// config.
func startFront(t *testing.T, cfg Config, mod func(*fileserver.Config)) *front {
	t.Helper()
	logs := &syncBuffer{}
	state := t.TempDir()
	fc := fileserver.Config{
		Addr:     "127.0.0.1:0",
		StateDir: state,
		Workers:  1,
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Handler:  NewForSite(cfg),
	}
	if mod != nil {
		mod(&fc)
	}
	s, err := fileserver.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &front{Server: s, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- s.Serve(ctx) }()
	t.Cleanup(func() { f.stop(t) })
	select {
	case <-s.HTTP3Ready():
	case err := <-f.done:
		t.Fatalf("Serve: %v", err)
	}
	pemData, err := os.ReadFile(filepath.Join(state, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	f.pool = x509.NewCertPool()
	f.pool.AddCert(cert)
	return f
}

// stop shuts the server down and waits for it; it may be called again.
func (f *front) stop(t *testing.T) {
	t.Helper()
	f.once.Do(func() {
		f.cancel()
		if err := <-f.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// client kinds: our HTTP/3 client, quic-go's, and net/http over TLS
// (HTTP/2, or HTTP/1.1).
const (
	clientH3     = "h3"
	clientQuicGo = "quic-go"
	clientH2     = "h2"
	clientH1     = "h1"
)

var allClients = []string{clientH3, clientQuicGo, clientH2}

// clientHandshakeTimeout is the HTTP/3 clients' QUIC handshake timeout:
// the 5 s default was seen to expire under CI's load (89a5208).
const clientHandshakeTimeout = 30 * time.Second

// client returns an HTTP client of kind trusting the front's certificate,
// closed when the test ends.
func (f *front) client(t *testing.T, kind string) *http.Client {
	t.Helper()
	tlsConf := &tls.Config{RootCAs: f.pool}
	var rt http.RoundTripper
	switch kind {
	case clientH3:
		rt = ourH3Transport(t, tlsConf)
	case clientQuicGo:
		rt = quicGoTransport(t, tlsConf)
	case clientH2:
		tr := &http.Transport{TLSClientConfig: tlsConf, ForceAttemptHTTP2: true, DisableCompression: true}
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	case clientH1:
		tr := &http.Transport{TLSClientConfig: tlsConf, Protocols: new(http.Protocols), DisableCompression: true}
		tr.Protocols.SetHTTP1(true)
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	default:
		t.Fatalf("unknown client %q", kind)
	}
	return &http.Client{Transport: rt}
}

// ourH3Transport is our HTTP/3 client, closed when the test ends.
func ourH3Transport(t *testing.T, tlsConf *tls.Config) *http3.Transport {
	tr := &http3.Transport{TLSClientConfig: tlsConf, DisableCompression: true,
		QUICConfig: &quic.Config{HandshakeIdleTimeout: clientHandshakeTimeout}}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// closeClient closes the connections of c.
func closeClient(c *http.Client) {
	switch tr := c.Transport.(type) {
	case *http3.Transport:
		tr.Close()
	case *http.Transport:
		tr.CloseIdleConnections()
	case interface{ Close() error }:
		tr.Close()
	}
}

// wantProto is the response protocol of a client kind.
func wantProto(kind string) string {
	switch kind {
	case clientH3, clientQuicGo:
		return "HTTP/3.0"
	case clientH2:
		return "HTTP/2.0"
	}
	return "HTTP/1.1"
}

// startUpstream serves h over plain HTTP on the loopback.
func startUpstream(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + serveOn(t, ln, h)
}

// startUnixUpstream serves h over HTTP/1.1 on a Unix domain socket.
func startUnixUpstream(t *testing.T, h http.Handler) string {
	t.Helper()
	// Socket paths are short (108 bytes): not under t.TempDir's long name.
	dir, err := os.MkdirTemp("", "proxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "up.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, h)
	return "unix:" + path
}

func serveOn(t *testing.T, ln net.Listener, h http.Handler) string {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	testutil.Serve(t, func() { srv.Serve(ln) }, func() { srv.Close() })
	return ln.Addr().String()
}

// deadUpstream returns the URL of a loopback port nothing listens on. The
// test holds the port (the local end of a connection of its own), so
// connecting to it is refused and no other process can listen there
// meanwhile, as it could on a port bound and closed.
func deadUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return "http://" + c.LocalAddr().String()
}

// records returns the access-log records written so far.
func (f *front) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(f.logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// metric returns the value of the counter or gauge name with labels, 0
// when absent.
func (f *front) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := f.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if labelValue(m, k) != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// eventually polls cond until it returns true; the bound only keeps a
// broken build from hanging.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

// checkNoLeak fails when, after the test's cleanups ran, more goroutines
// run than before it (a little slack for the runtime's).
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		for range 500 {
			if n = runtime.NumGoroutine(); n <= before+2 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after the test, %d before:\n%s", n, before, buf)
	})
}
