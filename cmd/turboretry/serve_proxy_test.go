package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/http3"
)

func TestServeProxyUsageErrors(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--upstream", "ftp://example.com"}, "want an http://, https://, h2c:// or unix: URL"},
		{[]string{"--upstream", "http://"}, "no host"},
		{[]string{"--route", "api=http://127.0.0.1:1"}, "want /prefix=URL"},
		{[]string{"--route", "/api=unix:sock"}, "want unix:/path"},
		{[]string{"--upstream-insecure"}, "need --upstream or --route"},
		{[]string{"--max-body-bytes", "1MiB"}, "need --upstream or --route"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--root", "."}, "--root and --upstream"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-timeout", "-1s"}, "--upstream-timeout"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-connect-timeout", "0s"}, "--upstream-connect-timeout"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--trust-forwarded", "lan"}, `--trust-forwarded "lan"`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--early-data", "accept"}, "--early-data"},
		{[]string{"--early-data", "hold"}, "need --upstream or --route"},
		{[]string{"--upstream-health", "/healthz"}, "need --upstream or --route"},
		{[]string{"--upstream-max-conns", "4"}, "need --upstream or --route"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-health", "healthz"}, `--upstream-health "healthz"`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-health-interval", "0s"}, "--upstream-health-interval"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-health-timeout", "-1s"}, "--upstream-health-timeout"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-max-conns", "-1"}, "--upstream-max-conns"},
		{[]string{"--upstream", "http://127.0.0.1:1", "--upstream-queue-timeout", "0s"}, "--upstream-queue-timeout"},
	} {
		args := append([]string{"serve", "--state-dir", state}, tc.args...)
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) || !strings.Contains(errOut, "usage: turboretry serve") {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	code, out, _ := runCLI("help", "serve")
	for _, f := range []string{"-upstream", "-route", "-upstream-ca", "-upstream-insecure", "-upstream-connect-timeout", "-upstream-timeout", "-max-body-bytes", "-trust-forwarded", "-early-data", "-upstream-health", "-upstream-health-interval", "-upstream-health-timeout", "-upstream-max-conns", "-upstream-queue-timeout", "reverse proxy"} {
		if code != exitOK || !strings.Contains(out, f) {
			t.Errorf("help serve lacks %q", f)
		}
	}
}

// TestServeProxy runs serve --upstream and --route against upstreams
// started here, over HTTPS and HTTP/3.
func TestServeProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "app %s %s body=%q xff=%s", r.Method, r.URL.Path, body, r.Header.Get("X-Forwarded-For"))
	})}
	go app.Serve(ln)
	defer app.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otherApp := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "other %s", r.URL.Path)
	})}
	go otherApp.Serve(other)
	defer otherApp.Close()

	srv := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0",
		"--upstream", "http://"+ln.Addr().String(),
		"--route", "/other=http://"+other.Addr().String(),
		"--max-body-bytes", "1KiB", "--upstream-timeout", "5s", "--trust-forwarded", "192.0.2.0/24",
		"--upstream-health", "/health", "--upstream-health-interval", "50ms", "--upstream-max-conns", "4")
	h2 := &http.Transport{TLSClientConfig: srv.tlsConfig(), ForceAttemptHTTP2: true}
	defer h2.CloseIdleConnections()
	h3 := &http3.Transport{TLSClientConfig: srv.tlsConfig()}
	defer h3.Close()
	for _, rt := range []http.RoundTripper{h2, h3} {
		c := &http.Client{Transport: rt}
		for _, tc := range []struct {
			method, path, body string
			code               int
			want               string
		}{
			{"POST", "hello", "hi", 200, `app POST /hello body="hi" xff=127.0.0.1`},
			{"GET", "other/x", "", 200, "other /other/x"},
			{"PUT", "big", strings.Repeat("b", 2000), 413, ""},
		} {
			req, _ := http.NewRequest(tc.method, srv.url+tc.path, strings.NewReader(tc.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || (tc.want != "" && string(body) != tc.want) {
				t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, body, tc.code, tc.want)
			}
		}
	}
	if code := srv.stop(); code != exitOK {
		t.Errorf("exit %d, stderr:\n%s", code, srv.errOut.String())
	}
	logs := srv.errOut.String()
	for _, w := range []string{"reverse proxy", "upstream=http://" + ln.Addr().String(), "upstream_status=200", "upstream_time=", "protocol=HTTP/3.0"} {
		if !strings.Contains(logs, w) {
			t.Errorf("log lacks %q:\n%s", w, logs)
		}
	}
}
