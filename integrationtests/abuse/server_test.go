//go:build linux

package abuse

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// builtBinary is a program a test binary builds once, without the race
// detector or other flags from the environment, into a temporary
// directory that TestMain removes.
type builtBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// The suite runs the real `turboretry serve`, built once per test binary
// without the race detector (its memory figures are the point), as a child
// process.
var serveBin builtBinary

func TestMain(m *testing.M) {
	if spec := os.Getenv(pnAttackerEnv); spec != "" {
		// This binary is the attacker process of a namespace test.
		os.Exit(pnAttackerMain(spec))
	}
	code := m.Run()
	for _, b := range []*builtBinary{&serveBin, &pnAttackerBin} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// build runs `go verb -o PATH args...` once, PATH being name in a new
// temporary directory, and returns PATH. The go command on PATH, as
// internal/archtest uses, in this test's directory (its package's).
func (b *builtBinary) build(t testing.TB, name, verb string, args ...string) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "abuse-"+name+"-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, name)
		cmd := exec.Command("go", append([]string{verb, "-o", b.path}, args...)...)
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildServe builds cmd/turboretry once and returns the binary's path:
// TURBORETRY_ABUSE_SERVE names a binary built elsewhere instead (another
// commit's, to see a test fail without a fix). No -race: the figures are
// those of the binary an operator runs.
func buildServe(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("TURBORETRY_ABUSE_SERVE"); bin != "" {
		return bin
	}
	return serveBin.build(t, "turboretry", "build", "github.com/turboretry/turboretry/cmd/turboretry")
}

// server is a running `turboretry serve` child.
type server struct {
	t       testing.TB
	cmd     *exec.Cmd
	pid     int
	addr    string // host:port, TCP and UDP
	url     string // https://addr/
	metrics string // http://.../metrics
	pool    *x509.CertPool
	certPEM []byte // the server's certificate, the clients' only root
	exited  chan struct{}
	log     *serverLog

	ns, clientNS, serverName string // serveOptions
	scraper                  *http.Client
}

// inClientNS runs fn, which makes sockets, in the clients' namespace.
func (s *server) inClientNS(fn func() error) error {
	if s.clientNS == "" {
		return fn()
	}
	return netnstest.In(s.clientNS, fn)
}

// clientTLS is the TLS configuration of the benign clients and attackers.
func (s *server) clientTLS(alpn ...string) *tls.Config {
	return &tls.Config{RootCAs: s.pool, ServerName: s.serverName, NextProtos: alpn}
}

// serverLog keeps the child's stderr: the last lines for diagnostics and
// what the readiness lines say.
type serverLog struct {
	mu       sync.Mutex
	tail     []string
	ready    chan struct{} // closed at "serving HTTP/3"
	isReady  bool
	metrics  string
	readDone chan struct{}
}

const logTail = 200

var metricsURL = regexp.MustCompile(`msg=metrics url=(\S+)`)

func (l *serverLog) scan(r io.Reader) {
	defer close(l.readDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		if m := metricsURL.FindStringSubmatch(line); m != nil {
			l.metrics = m[1]
		}
		if !l.isReady && strings.Contains(line, `msg="serving HTTP/3"`) {
			l.isReady = true
			close(l.ready)
		}
		l.tail = append(l.tail, line)
		if len(l.tail) > logTail {
			l.tail = slices.Delete(l.tail, 0, len(l.tail)-logTail)
		}
		l.mu.Unlock()
	}
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}

// startServer runs `turboretry serve` on a free loopback port with a
// temporary state directory and metrics, plus args (e.g. --root), and
// waits until it serves HTTP/3. The process is killed at cleanup.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	return startServerWith(t, serveOptions{args: args})
}

// serveOptions place a server and its clients.
type serveOptions struct {
	// ns is the network namespace the server runs in ("" for this one);
	// its metrics listen on that namespace's loopback.
	ns string
	// clientNS is where the attacker and the benign clients make their
	// sockets ("" for this one).
	clientNS string
	// serverName is the TLS server name for clients when the URL's host
	// is not in the certificate (which covers localhost and 127.0.0.1).
	serverName string
	// args follow the suite's own (--addr 127.0.0.1:0, --state-dir,
	// --metrics, --workers 1); a later --addr or --workers wins.
	args []string
	// place is the server's CPUs (the zero value: anywhere).
	place placement
}

func startServerWith(t testing.TB, o serveOptions) *server {
	t.Helper()
	bin := buildServe(t)
	state := filepath.Join(t.TempDir(), "state")
	// One worker: the bounds the suite asserts are the server's, and the
	// QUIC limits hold per worker (docs/fileserver.md), so N workers hold
	// N times each; a later --workers in args wins. Every client of the
	// suite is on one loopback /24, so admission by source prefix (on by
	// default) would hold the attacks to half the global limits and a
	// rate: the suite measures the global bounds, and turns it off (a
	// later --prefix-admission in args wins).
	argv := append([]string{bin, "serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--metrics", "127.0.0.1:0", "--workers", "1",
		"--prefix-admission=false"}, o.args...)
	if o.ns != "" {
		// ip netns exec switches namespaces and execs the binary: the
		// server keeps the child's PID.
		argv = append([]string{"ip", "netns", "exec", o.ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := startPlaced(cmd, o.place); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}), ns: o.ns, clientNS: o.clientNS, serverName: o.serverName,
		log: &serverLog{ready: make(chan struct{}), readDone: make(chan struct{})}}
	urlc := make(chan string, 1)
	stdoutDone := make(chan struct{})
	go func() {
		defer close(stdoutDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Serving "); ok && len(urlc) == 0 {
				urlc <- u
			}
		}
	}()
	go s.log.scan(stderr)
	go func() {
		// Wait closes the pipes: only once both readers are done.
		<-s.log.readDone
		<-stdoutDone
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.kill)

	// The bound only keeps a broken binary from hanging the suite.
	select {
	case <-s.log.ready:
	case <-s.exited:
		t.Fatalf("serve exited before serving HTTP/3:\n%s", s.log)
	case <-time.After(time.Minute):
		t.Fatalf("serve did not start serving HTTP/3 within a minute:\n%s", s.log)
	}
	s.url = <-urlc
	s.addr = strings.TrimSuffix(strings.TrimPrefix(s.url, "https://"), "/")
	s.log.mu.Lock()
	s.metrics = s.log.metrics
	s.log.mu.Unlock()
	if s.metrics == "" {
		t.Fatalf("serve logged no metrics address:\n%s", s.log)
	}
	pemData, err := os.ReadFile(filepath.Join(state, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("cert.pem holds no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	s.certPEM = pemData
	s.pool = x509.NewCertPool()
	s.pool.AddCert(cert)
	if s.ns != "" {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.pid)); err != nil || filepath.Base(target) != "turboretry" {
			t.Fatalf("PID %d runs %q (%v), not the server", s.pid, target, err)
		}
	}
	s.scraper = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			in := func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err }
			if s.ns == "" {
				return c, in()
			}
			return c, netnstest.In(s.ns, in)
		},
	}}
	t.Cleanup(s.scraper.CloseIdleConnections)
	return s
}

// kill ends the child and waits.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// alive fails the test when the server died.
func (s *server) alive() {
	s.t.Helper()
	select {
	case <-s.exited:
		s.t.Fatalf("serve died:\n%s", s.log)
	default:
	}
}

// procStatusKiB reads a "Name:   N kB" line of /proc/PID/status.
func (s *server) procStatusKiB(name string) int64 {
	s.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		s.t.Fatalf("reading the server's status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				s.t.Fatalf("%s: %q: %v", name, line, err)
			}
			return n
		}
	}
	s.t.Fatalf("no %s in /proc/%d/status", name, s.pid)
	return 0
}

// rssMB is the server's resident memory now; peakRSSMB its high-water
// mark since it started (VmHWM), which no sampling can miss.
func (s *server) rssMB() float64     { return float64(s.procStatusKiB("VmRSS")) / 1024 }
func (s *server) peakRSSMB() float64 { return float64(s.procStatusKiB("VmHWM")) / 1024 }

// fds is the number of files the server has open.
func (s *server) fds() int {
	s.t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil {
		s.t.Fatalf("reading the server's fds: %v", err)
	}
	return len(ents)
}

// cpu is the server's user plus system CPU time so far.
func (s *server) cpu() time.Duration {
	s.t.Helper()
	d, err := procCPU(s.pid)
	if err != nil {
		s.t.Fatalf("reading the server's stat: %v", err)
	}
	return d
}

// procCPU is process pid's user plus system CPU time so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which may hold spaces: state is
	// field 3, utime and stime are fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clockTicks = 100 // USER_HZ, 100 on every Linux architecture Go supports
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// scrape reads the server's /metrics and sums each metric over its
// label sets.
func (s *server) scrape() map[string]float64 {
	s.t.Helper()
	m, err := s.scrapeMetrics()
	if err != nil {
		s.alive()
		s.t.Fatal(err)
	}
	return m
}

// scrapeMetrics is scrape for any goroutine: it returns its error.
func (s *server) scrapeMetrics() (map[string]float64, error) {
	resp, err := s.scraper.Get(s.metrics)
	if err != nil {
		return nil, fmt.Errorf("scraping metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series := line[:sp]
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels, ok := strings.Cut(series, "{")
		out[name] += v
		if ok {
			out[seriesKey(name, strings.TrimSuffix(labels, "}"))] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// seriesKey names one labelled series as series does, whatever the order
// its exposition gave the labels in.
func seriesKey(name, labels string) string {
	var pairs []string
	for labels != "" {
		// name="value", values with no quotes or commas inside: the
		// suite reads only such labels.
		pair, rest, _ := strings.Cut(labels, ",")
		pairs = append(pairs, pair)
		labels = rest
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// series is the key scrape gives one labelled series: labels are
// name, value pairs.
func series(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	return seriesKey(name, strings.Join(pairs, ","))
}

// sampler scrapes the server's metrics every interval while an attack
// runs and keeps each one's highest value: gauges such as live
// connections peak during the attack, not after it.
type sampler struct {
	s    *server
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	max map[string]float64
	err error
}

func (s *server) sample(interval time.Duration) *sampler {
	sm := &sampler{s: s, stop: make(chan struct{}), done: make(chan struct{}), max: map[string]float64{}}
	go func() {
		defer close(sm.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			m, err := s.scrapeMetrics()
			sm.mu.Lock()
			if err != nil && sm.err == nil {
				sm.err = err
			}
			for k, v := range m {
				if n, ok := sm.max[k]; !ok || v > n {
					sm.max[k] = v
				}
			}
			sm.mu.Unlock()
			select {
			case <-sm.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

// finish stops sampling and returns the highest value of each metric.
func (sm *sampler) finish(t *testing.T) map[string]float64 {
	t.Helper()
	close(sm.stop)
	<-sm.done
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.err != nil {
		sm.s.alive()
		t.Fatal(sm.err)
	}
	return sm.max
}

// Metric names on the server's /metrics that the suite reads.
const (
	mConns        = "turboretry_quic_transport_connections" // QUIC connections, handshaking ones included
	mUnvalid      = "turboretry_quic_handshakes_in_flight"  // not address-validated: what AutoRetry sees
	mRetries      = "turboretry_quic_retries_sent_total"
	mGoroutines   = "go_goroutines"
	mSendBuffered = "turboretry_quic_send_buffered_bytes"
	mHeaderBytes  = "turboretry_http3_header_bytes_reserved"
	mH3Refused    = "turboretry_http3_refused_total"
	mQUICPanics   = "turboretry_quic_panics_recovered_total"
	mH3Panics     = "turboretry_http3_handler_panics_total"
)

// checkNoPanics fails the test if the server recovered a panic: each
// one is a bug an attack reached (logged at ERROR with its stack).
func checkNoPanics(t *testing.T, m map[string]float64) {
	t.Helper()
	if m[mQUICPanics] != 0 || m[mH3Panics] != 0 {
		t.Errorf("the server recovered %.0f QUIC and %.0f handler panics during the attack", m[mQUICPanics], m[mH3Panics])
	}
}

// ctxFor is a context for the test, ended at cleanup; the bound only
// keeps a broken build from hanging.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// histogramQuantile estimates the q quantile (0..1) of the observations a
// histogram of the server's /metrics (name, without _bucket) made between
// two scrapes, as the upper bound of the bucket it falls in; 0 for none,
// +Inf past the last bucket.
func histogramQuantile(before, after map[string]float64, name string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + `_bucket{le="`
	for k, v := range after {
		le, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{bound, v - before[k]})
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0
	}
	want := q * bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= want {
			return b.le
		}
	}
	return bs[len(bs)-1].le
}
