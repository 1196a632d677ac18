package proxy

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestProxyHTTPSUpstream: an https upstream is reached over HTTP/2 when
// it offers it, with its certificate checked against --upstream-ca, or
// not at all with --upstream-insecure; without either a self-signed
// upstream is a TLS failure (502). Trailers pass over HTTP/2 too.
func TestProxyHTTPSUpstream(t *testing.T) {
	checkNoLeak(t)
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s", r.Proto, r.Trailer.Get("X-Req"))
		w.Header().Set("Grpc-Status", "0")
	}))
	app.EnableHTTP2 = true
	app.StartTLS()
	defer app.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: app.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		code int
	}{
		{"ca", Config{CAFile: ca}, 200},
		{"insecure", Config{Insecure: true}, 200},
		{"untrusted", Config{}, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Upstreams = []string{app.URL}
			f := startFront(t, tc.cfg, nil)
			c := f.client(t, clientH3)
			defer closeClient(c)
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", f.URL(), pr)
			req.Trailer = http.Header{"X-Req": nil}
			go func() {
				io.WriteString(pw, "data")
				req.Trailer.Set("X-Req", "r1")
				pw.Close()
			}()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %q, want %d", resp.StatusCode, body, tc.code)
			}
			if tc.code != 200 {
				if n := f.metric(t, "turboretry_proxy_upstream_errors_total", map[string]string{"upstream": app.URL, "kind": "tls"}); n != 1 {
					t.Errorf("tls errors %v, want 1", n)
				}
				return
			}
			if string(body) != "HTTP/2.0 r1" || resp.Trailer.Get("Grpc-Status") != "0" {
				t.Errorf("body %q, trailers %v", body, resp.Trailer)
			}
		})
	}
}
