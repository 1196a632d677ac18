package fileserver

import (
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/http3"
)

// h3TLS returns a client TLS config that trusts the server's certificate.
func (ts *testServer) h3TLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ts.certs.current().Leaf)
	return &tls.Config{RootCAs: pool}
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

func TestServeHTTP3WithOurClient(t *testing.T) {
	ts := startServer(t, nil)
	tr := &http3.Transport{TLSClientConfig: ts.h3TLS()}
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
	tr := &http3.Transport{TLSClientConfig: ts.h3TLS()}
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
	text := string(ts.Metrics().AppendText(nil))
	for _, want := range []string{
		`turboretry_quic_tokens_accepted_total{source="host",type="retry"} 1`,
		"turboretry_quic_handshakes_in_flight ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "turboretry_quic_retries_sent_total 0\n") {
		t.Errorf("no Retry counted:\n%s", text)
	}
}
