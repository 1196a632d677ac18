package servebench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// The child roles of the proxy benchmark: the upstream application
// (arguments: ADDR) and the quic-go baseline proxy (ADDR UPSTREAM CERT KEY).
const (
	upstreamRoleEnv = "SERVEBENCH_UPSTREAM"
	proxyRoleEnv    = "SERVEBENCH_QUICGO_PROXY"
)

// The upstream's responses: a small one (an API answer) and a large one
// (a download), both from memory.
const (
	smallResponse = "/1KB"
	largeResponse = "/64MiB"
)

var responseSizes = map[string]int{smallResponse: 1000, largeResponse: 64 << 20}

// serveUpstream is the application behind every proxy: net/http over
// plain HTTP/1.1, answering the responses from memory, until SIGTERM.
func serveUpstream(args []string) error {
	if len(args) != 1 {
		return errors.New("want ADDR")
	}
	bodies := map[string][]byte{}
	for path, size := range responseSizes {
		b := make([]byte, size)
		rand.Read(b)
		bodies[path] = b
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	})
	srv := &http.Server{Addr: args[0], Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return serveUntilSignal(func() error { return srv.ListenAndServe() }, srv.Close)
}

// serveQuicGoProxy is the baseline proxy: quic-go's http3.Server with
// net/http/httputil.ReverseProxy, as a quic-go user would write one (the
// standard forwarding fields, idle connections enough for the benchmark's
// concurrency).
func serveQuicGoProxy(args []string) error {
	if len(args) != 4 {
		return errors.New("want ADDR UPSTREAM CERT KEY")
	}
	up, err := url.Parse(args[1])
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(args[2], args[3])
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
	}
	pc, err := net.ListenPacket("udp", args[0])
	if err != nil {
		return err
	}
	h3 := &quicgohttp3.Server{Handler: rp,
		TLSConfig: quicgohttp3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})}
	return serveUntilSignal(func() error { return h3.Serve(pc) }, h3.Close)
}

// serveUntilSignal runs serve until it fails or SIGTERM (or an interrupt)
// comes, then stops it.
func serveUntilSignal(serve func() error, stop func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	select {
	case <-ctx.Done():
		stop()
		return nil
	case err := <-errc:
		return err
	}
}

// proxyKinds are the proxies a run compares: `turboretry serve
// --upstream`, Caddy's reverse_proxy, and quic-go + httputil.
var proxyKinds = []string{"turboretry", "caddy", "quicgo"}

// startUpstream starts the upstream application on a free loopback port
// and waits until it answers.
func startUpstream(tb testing.TB) *server {
	tb.Helper()
	setup(tb)
	for range portTries {
		s := &server{name: "upstream", addr: freePort(tb), exited: make(chan struct{})}
		s.cmd = exec.Command(os.Args[0], s.addr)
		s.cmd.Env = append(os.Environ(), upstreamRoleEnv+"=1")
		s.start(tb)
		c := &http.Client{Timeout: 10 * time.Second}
		if s.waitUp(tb, func() error {
			return fetchOnce(c, "http://"+s.addr+smallResponse, responseSizes[smallResponse])
		}) {
			return s
		}
	}
	tb.Fatalf("upstream: every one of %d free ports was taken before it could bind", portTries)
	return nil
}

// caddyMissing says why the Caddy comparison cannot run, or "".
func caddyMissing() string {
	if _, err := exec.LookPath("caddy"); err != nil {
		return "caddy is not installed (Debian: apt-get install caddy); its comparison is skipped"
	}
	return ""
}

// startProxy starts the proxy kind in front of up on a free loopback port
// and waits until it answers over HTTP/3.
func startProxy(tb testing.TB, kind string, up *server) *server {
	tb.Helper()
	setup(tb)
	for range portTries {
		if s := startProxyOn(tb, kind, up, freePort(tb)); s != nil {
			return s
		}
	}
	tb.Fatalf("%s: every one of %d free ports was taken before it could bind", kind, portTries)
	return nil
}

// startProxyOn is startProxy on addr; it returns nil when the proxy
// exited because another process bound addr first.
func startProxyOn(tb testing.TB, kind string, up *server, addr string) *server {
	tb.Helper()
	s := &server{name: kind, addr: addr, exited: make(chan struct{})}
	cert, key := filepath.Join(workDir, "cert.pem"), filepath.Join(workDir, "key.pem")
	upURL := "http://" + up.addr
	switch kind {
	case "turboretry":
		// Loopback clients share one prefix: admission by prefix would
		// rate limit the benchmark's connections (see startServer).
		s.cmd = exec.Command(filepath.Join(workDir, "turboretry"), "serve", "--addr", s.addr,
			"--cert", cert, "--key", key, "--state-dir", tb.TempDir(), "--prefix-admission=false",
			"--upstream", upURL)
	case "caddy":
		if why := caddyMissing(); why != "" {
			tb.Skip(why)
		}
		dir := tb.TempDir()
		conf := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(conf, []byte(caddyfile(s.addr, up.addr, cert, key)), 0o600); err != nil {
			tb.Fatal(err)
		}
		s.cmd = exec.Command("caddy", "run", "--adapter", "caddyfile", "--config", conf)
		// Caddy keeps its state under these; a fresh one per run.
		s.cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	case "quicgo":
		s.cmd = exec.Command(os.Args[0], s.addr, upURL, cert, key)
		s.cmd.Env = append(os.Environ(), proxyRoleEnv+"=1")
	default:
		tb.Fatalf("unknown proxy %q", kind)
	}
	s.start(tb)
	if !s.waitUp(tb, func() error {
		c := newH3Client()
		defer closeClient(c)
		return fetchOnce(c, s.url(smallResponse[1:]), responseSizes[smallResponse])
	}) {
		return nil
	}
	return s
}

// caddyfile is Caddy's configuration: HTTP/3 (and HTTPS over TCP) on
// addr with the benchmark's certificate, everything proxied to upstream,
// an access log as turboretry writes one, no admin endpoint.
func caddyfile(addr, upstream, cert, key string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf(`{
	admin off
	auto_https off
	skip_install_trust
	servers {
		protocols h1 h2 h3
	}
}
:%s {
	bind %s
	tls %s %s
	reverse_proxy %s
	log {
		output stderr
		format json
	}
}
`, port, host, cert, key, upstream)
}

// start starts s's command, its output kept, stopped when tb ends.
func (s *server) start(tb testing.TB) {
	tb.Helper()
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	tb.Cleanup(func() { s.stop(tb) })
}

// waitUp polls ready until it succeeds (true); it returns false when s
// exited because its port was taken, and fails tb when s exits otherwise
// or a minute passes first.
func (s *server) waitUp(tb testing.TB, ready func() error) bool {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ready()
		if err == nil {
			return true
		}
		if s.portTaken(tb) {
			return false
		}
		if time.Now().After(deadline) || s.hasExited() {
			tb.Fatalf("%s did not come up: %v\n%s", s.name, err, s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
