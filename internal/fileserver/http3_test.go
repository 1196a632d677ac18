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
			if r["msg"] == "serving HTTP/3" && r["udp"] == udp {
				return nil
			}
		}
		return errorf("no %q record for UDP %s", "serving HTTP/3", udp)
	})
	eventually(t, func() error {
		for _, r := range ts.logs.records(t) {
			if r["msg"] == "HTTP/3: retry mode not enforced yet: the QUIC listener has no address-validation hook, every client is accepted without a Retry" && r["retry"] == "auto" {
				return nil
			}
		}
		return errorf("the default retry mode is not logged as not enforced")
	})
}
