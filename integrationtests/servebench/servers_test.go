package servebench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/internal/testutil"
)

// roleEnv makes the test binary serve as quic-go's HTTP/3 server plus
// net/http's HTTPS server (its arguments: ADDR ROOT CERT KEY).
const roleEnv = "SERVEBENCH_QUICGO_SERVER"

func TestMain(m *testing.M) {
	for env, role := range childRoles {
		if os.Getenv(env) != "1" {
			continue
		}
		if err := role(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, env+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// childRoles are what the test binary can be when started as a child
// process of the benchmarks, by environment variable.
var childRoles = map[string]func(args []string) error{
	roleEnv:         serveQuicGo,
	upstreamRoleEnv: serveUpstream,
	proxyRoleEnv:    serveQuicGoProxy,
}

// serveQuicGo is the baseline: quic-go's http3.Server and net/http's
// server on the same port, both with http.FileServer, until SIGTERM.
func serveQuicGo(args []string) error {
	if len(args) != 4 {
		return errors.New("want ADDR ROOT CERT KEY")
	}
	addr, root := args[0], args[1]
	cert, err := tls.LoadX509KeyPair(args[2], args[3])
	if err != nil {
		return err
	}
	h := http.FileServer(http.Dir(root))
	h3 := &quicgohttp3.Server{Addr: addr, Handler: h,
		TLSConfig: quicgohttp3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})}
	tcp := &http.Server{Addr: addr, Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- h3.Serve(pc) }()
	go func() { errc <- tcp.ServeTLS(ln, "", "") }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	select {
	case <-ctx.Done():
		h3.Close()
		tcp.Close()
		return nil
	case err := <-errc:
		return err
	}
}

// The files every server serves, and the work directory that holds them,
// the certificate and the turboretry binary (made once per process).
const (
	largeFile = "64MiB.bin"
	smallFile = "100KB.bin"
	tinyFile  = "1KB.bin"
)

var fileSizes = map[string]int{largeFile: 64 << 20, smallFile: 100_000, tinyFile: 1000}

// binaryFlag runs a turboretry binary built elsewhere instead of this
// tree's ($SERVEBENCH_TURBORETRY does the same).
var binaryFlag = flag.String("servebench.binary", "", "run this turboretry `binary` instead of building the tree's")

var (
	workOnce sync.Once
	workDir  string
	workErr  error
	// turboretryBin is the server binary: built from this tree, or a
	// link to -servebench.binary.
	turboretryBin string
	roots         *x509.CertPool
)

// setup makes the site, the certificate files and the turboretry binary.
func setup(tb testing.TB) {
	tb.Helper()
	certPEM, keyPEM, pool := testcert.PEM(tb)
	workOnce.Do(func() {
		roots = pool
		if workDir, workErr = os.MkdirTemp("", "servebench-"); workErr != nil {
			return
		}
		site := filepath.Join(workDir, "site")
		if workErr = os.Mkdir(site, 0o755); workErr != nil {
			return
		}
		for name, size := range fileSizes {
			if workErr = os.WriteFile(filepath.Join(site, name), randomBytes(size), 0o644); workErr != nil {
				return
			}
		}
		if workErr = os.WriteFile(filepath.Join(workDir, "cert.pem"), certPEM, 0o600); workErr != nil {
			return
		}
		if workErr = os.WriteFile(filepath.Join(workDir, "key.pem"), keyPEM, 0o600); workErr != nil {
			return
		}
		bin := *binaryFlag
		if bin == "" {
			bin = os.Getenv("SERVEBENCH_TURBORETRY")
		}
		turboretryBin = filepath.Join(workDir, "turboretry")
		if bin != "" {
			// Another build (an A/B of two commits): linked, not built.
			abs, err := filepath.Abs(bin)
			if err == nil {
				err = os.Symlink(abs, turboretryBin)
			}
			workErr = err
			return
		}
		out, err := exec.Command("go", "build", "-o", turboretryBin,
			"github.com/turboretry/turboretry/cmd/turboretry").CombinedOutput()
		if err != nil {
			workErr = fmt.Errorf("building turboretry: %v\n%s", err, out)
		}
	})
	if workErr != nil {
		tb.Fatal(workErr)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// server is one server process under measurement.
type server struct {
	name string
	addr string // host:port, TCP and UDP
	cmd  *exec.Cmd
	logs testutil.SyncBuffer // the exec package copies into it from its own goroutine
	// exited is closed when the process has ended.
	exited chan struct{}
}

// serverKinds names the servers a run compares: turboretry with its
// defaults, turboretry with one worker, and the quic-go + net/http baseline.
var serverKinds = []string{"turboretry", "turboretry-w1", "quicgo"}

// startServer starts kind on a free loopback port and waits until it
// answers over TCP and HTTP/3.
func startServer(tb testing.TB, kind string) *server {
	tb.Helper()
	setup(tb)
	for range portTries {
		if s := startServerOn(tb, kind, freePort(tb)); s != nil {
			return s
		}
	}
	tb.Fatalf("%s: every one of %d free ports was taken before it could bind", kind, portTries)
	return nil
}

// startServerOn is startServer on addr; it returns nil when the server
// exited because another process bound addr first.
func startServerOn(tb testing.TB, kind, addr string) *server {
	tb.Helper()
	s := &server{name: kind, addr: addr, exited: make(chan struct{})}
	site := filepath.Join(workDir, "site")
	cert, key := filepath.Join(workDir, "cert.pem"), filepath.Join(workDir, "key.pem")
	switch kind {
	case "turboretry", "turboretry-w1":
		// Every client is on loopback, one source prefix: admission by
		// prefix would rate limit the benchmark's connections (it is a
		// policy against botnets, not a cost worth comparing).
		args := []string{"serve", "--addr", s.addr, "--root", site, "--cert", cert, "--key", key,
			"--state-dir", tb.TempDir(), "--prefix-admission=false"}
		if kind == "turboretry-w1" {
			args = append(args, "--workers", "1")
		}
		s.cmd = exec.Command(turboretryBin, args...)
	case "quicgo":
		s.cmd = exec.Command(os.Args[0], s.addr, site, cert, key)
		s.cmd.Env = append(os.Environ(), roleEnv+"=1")
	default:
		tb.Fatalf("unknown server %q", kind)
	}
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	tb.Cleanup(func() { s.stop(tb) })
	deadline := time.Now().Add(60 * time.Second)
	for {
		tcp, h3 := newTCPClient(), newH3Client()
		errTCP := fetchOnce(tcp, s.url(tinyFile), fileSizes[tinyFile])
		errH3 := fetchOnce(h3, s.url(tinyFile), fileSizes[tinyFile])
		closeClient(tcp)
		closeClient(h3)
		if errTCP == nil && errH3 == nil {
			return s
		}
		if s.portTaken(tb) {
			return nil
		}
		if time.Now().After(deadline) || s.hasExited() {
			tb.Fatalf("%s did not come up: tcp %v, h3 %v\n%s", kind, errTCP, errH3, s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) url(file string) string { return "https://" + s.addr + "/" + file }

func (s *server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// portTries bounds how often a server is started again on another port.
const portTries = 5

// portTaken reports whether s exited because its address was in use:
// freePort's port is free only when it is probed, and another test
// binary running beside this one may bind it before the server does.
func (s *server) portTaken(tb testing.TB) bool {
	tb.Helper()
	if !s.hasExited() || !strings.Contains(s.logs.String(), "address already in use") {
		return false
	}
	tb.Logf("%s: %s was taken before the server bound it; another port", s.name, s.addr)
	return true
}

func (s *server) stop(tb testing.TB) {
	if s.hasExited() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		tb.Logf("%s did not stop on SIGTERM within 10 s; killed", s.name)
	}
}

// cpuSeconds returns the user and system CPU time the server process has
// used (all its threads), from /proc/PID/stat.
func (s *server) cpuSeconds(tb testing.TB) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name (field 2) may hold spaces; fields after ")" are fixed.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("parsing /proc stat: %v %v", err1, err2)
	}
	return float64(utime+stime) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// rssBytes returns the server's resident set size (VmRSS).
func (s *server) rssBytes(tb testing.TB) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n * 1024
		}
	}
	tb.Fatal("no VmRSS in /proc status")
	return 0
}

// freePort returns a loopback address whose port is free for both TCP and
// UDP at the time of the call.
func freePort(tb testing.TB) string {
	tb.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		pc, err := net.ListenPacket("udp", addr)
		ln.Close()
		if err == nil {
			pc.Close()
			return addr
		}
	}
	tb.Fatal("no loopback port free for TCP and UDP")
	return ""
}

func clientTLS() *tls.Config { return &tls.Config{RootCAs: roots, ServerName: "localhost"} }

// newH3Client is quic-go's HTTP/3 client: one connection per client.
func newH3Client() *http.Client {
	return &http.Client{Transport: &quicgohttp3.Transport{TLSClientConfig: clientTLS()}, Timeout: 60 * time.Second}
}

// newTCPClient is net/http's client over TLS, HTTP/2 where offered.
func newTCPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(), ForceAttemptHTTP2: true},
		Timeout: 60 * time.Second}
}

func closeClient(c *http.Client) {
	switch tr := c.Transport.(type) {
	case *quicgohttp3.Transport:
		tr.Close()
	case *http.Transport:
		tr.CloseIdleConnections()
	}
}

// fetchOnce GETs url and checks that the body has want bytes.
func fetchOnce(c *http.Client, url string, want int) error {
	rsp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer rsp.Body.Close()
	n, err := io.Copy(io.Discard, rsp.Body)
	if err != nil {
		return err
	}
	if rsp.StatusCode != http.StatusOK || n != int64(want) {
		return fmt.Errorf("GET %s: status %d, %d of %d bytes", url, rsp.StatusCode, n, want)
	}
	return nil
}
