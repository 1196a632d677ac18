package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/turboretry/turboretry/internal/testutil"
)

// serveBuffer is a bytes.Buffer the server's goroutines may write to.
type serveBuffer = testutil.SyncBuffer

// serveWait polls until cond holds; the bound only keeps a broken build
// from hanging.
func serveWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

func TestServeUsageErrors(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--retry", "sometimes"}, `invalid retry mode "sometimes"`},
		{[]string{"--cert", "c.pem"}, "--cert and --key go together"},
		{[]string{"--key", "k.pem"}, "--cert and --key go together"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--workers", "-1"}, "--workers -1"},
		{[]string{"--workers", "257"}, "--workers 257"},
		{[]string{"--cid-nonce-len", "3"}, "--cid-*"},
		{[]string{"--cid-host-id", "0102030405060708090a0b0c0d0e0f"}, "--cid-*"},
		{[]string{"--fastpath", "none"}, `--fastpath "none"`},
	} {
		args := append([]string{"serve", "--state-dir", state}, tc.args...)
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) || !strings.Contains(errOut, "usage: turboretry serve") {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	code, out, _ := runCLI("help", "serve")
	if code != exitOK || !strings.Contains(out, "-state-dir") || !strings.Contains(out, "-retry") {
		t.Errorf("help serve: exit %d, %q", code, out)
	}
}

func TestServeRuntimeErrors(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not PEM"), 0o600)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--root", filepath.Join(dir, "missing")}, "root directory"},
		{[]string{"--addr", busy.Addr().String()}, "address already in use"},
		{[]string{"--cert", garbage, "--key", garbage}, "garbage.pem"},
		{[]string{"--secret", filepath.Join(dir, "nokey")}, "nokey"},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir()}, tc.args...)
		code, _, errOut := runCLI(args...)
		if code != exitFail || !strings.Contains(errOut, "serve: ") || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

// runningServe is `turboretry serve` running in-process.
type runningServe struct {
	url, spki   string
	cert        *x509.Certificate // the generated certificate, from the state directory
	out, errOut serveBuffer
	cancel      context.CancelFunc
	exit        chan int
	stopOnce    sync.Once
	code        int
}

// startServe runs serve with --state-dir state and args, and waits until
// it printed its URL and SPKI hash.
func startServe(t *testing.T, state string, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningServe{cancel: cancel, exit: make(chan int, 1)}
	args = append([]string{"serve", "--state-dir", state}, args...)
	go func() { s.exit <- run(ctx, args, &s.out, &s.errOut) }()
	t.Cleanup(func() { s.stop() })
	serveWait(t, "the SPKI line", func() bool { return strings.Contains(s.out.String(), "SPKI sha256 (base64): ") })
	for line := range strings.Lines(s.out.String()) {
		line = strings.TrimSpace(line)
		if u, ok := strings.CutPrefix(line, "Serving "); ok {
			s.url = u
		}
		if h, ok := strings.CutPrefix(line, "SPKI sha256 (base64): "); ok {
			s.spki = h
		}
	}
	pemData, err := os.ReadFile(filepath.Join(state, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("cert.pem holds no PEM block")
	}
	if s.cert, err = x509.ParseCertificate(block.Bytes); err != nil {
		t.Fatal(err)
	}
	return s
}

// stop cancels serve and returns its exit code; it may be called again.
func (s *runningServe) stop() int {
	s.stopOnce.Do(func() {
		s.cancel()
		s.code = <-s.exit
	})
	return s.code
}

// tlsConfig trusts the server's certificate.
func (s *runningServe) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.cert)
	return &tls.Config{RootCAs: pool}
}

func TestServeEndToEnd(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	srv := startServe(t, state, "--addr", "127.0.0.1:0", "--retry", "always")
	url, spki, cert := srv.url, srv.spki, srv.cert
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	if want := base64.StdEncoding.EncodeToString(sum[:]); spki != want {
		t.Errorf("printed SPKI %q, want %q", spki, want)
	}
	for name, want := range map[string]os.FileMode{"key.pem": 0o600, "secret.key": 0o600} {
		st, err := os.Stat(filepath.Join(state, name))
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v", name, err, st.Mode().Perm())
		}
	}

	tr := &http.Transport{TLSClientConfig: srv.tlsConfig(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" || !strings.Contains(string(body), "TurboRetry") || resp.Header.Get("Alt-Svc") == "" {
		t.Errorf("GET %s: %d %s, Alt-Svc %q", url, resp.StatusCode, resp.Proto, resp.Header.Get("Alt-Svc"))
	}

	// SIGHUP reloads instead of killing the process (where there is one).
	if sent, err := sendReloadSignal(); err != nil {
		t.Fatal(err)
	} else if sent {
		serveWait(t, "the reload", func() bool { return strings.Contains(srv.errOut.String(), "root secret loaded") })
	}

	if code := srv.stop(); code != exitOK {
		t.Errorf("exit %d, stderr:\n%s", code, srv.errOut.String())
	}
	logs := srv.errOut.String()
	for _, w := range []string{"retry=always", "--origin-to-force-quic-on=", "serving HTTP/3", "shutting down", "stopped", "method=GET",
		"msg=\"doctor: ", " ok, ", "cid_len=10"} {
		if !strings.Contains(logs, w) {
			t.Errorf("log lacks %q:\n%s", w, logs)
		}
	}
}

// TestServeFileFlags: by default serve hides dotfiles and directory
// listings and answers only GET and HEAD; --dotfiles and --list-dirs turn
// the first two on.
func TestServeFileFlags(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".env"), []byte("SECRET=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := func(srv *runningServe, method, path string) int {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: srv.tlsConfig()}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequest(method, srv.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		flags              []string
		dotfile, listing   int
		post, plainFileGet int
	}{
		{nil, 404, 404, 405, 200},
		{[]string{"--dotfiles", "--list-dirs"}, 200, 200, 405, 200},
	} {
		srv := startServe(t, t.TempDir(), append([]string{"--addr", "127.0.0.1:0", "--root", root}, tc.flags...)...)
		got := [4]int{status(srv, "GET", ".env"), status(srv, "GET", ""), status(srv, "POST", "a.txt"), status(srv, "GET", "a.txt")}
		if want := [4]int{tc.dotfile, tc.listing, tc.post, tc.plainFileGet}; got != want {
			t.Errorf("%v: /.env, /, POST /a.txt, /a.txt = %v, want %v", tc.flags, got, want)
		}
		srv.stop()
	}
}
