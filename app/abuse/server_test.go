package abuse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The suite runs the real `turboretry serve`, built once per test binary
// without the race detector (its memory figures are the point), as a child
// process.
var serveBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if serveBin.dir != "" {
		os.RemoveAll(serveBin.dir)
	}
	os.Exit(code)
}

// goTool finds the go command: on PATH, else in the GOROOT that built us.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// buildServe builds cmd/turboretry once and returns the binary's path.
func buildServe(t testing.TB) string {
	t.Helper()
	serveBin.once.Do(func() {
		out, err := exec.Command(goTool(), "env", "GOMOD").Output()
		if err != nil {
			serveBin.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if serveBin.dir, serveBin.err = os.MkdirTemp("", "abuse-serve-"); serveBin.err != nil {
			return
		}
		serveBin.path = filepath.Join(serveBin.dir, "turboretry")
		cmd := exec.Command(goTool(), "build", "-o", serveBin.path, "./cmd/turboretry")
		cmd.Dir = root
		// No -race (or other flags) from the environment: the figures are
		// those of the binary an operator runs.
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			serveBin.err = fmt.Errorf("go build ./cmd/turboretry: %v\n%s", err, out)
		}
	})
	if serveBin.err != nil {
		t.Fatal(serveBin.err)
	}
	return serveBin.path
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
	exited  chan struct{}
	log     *serverLog
}

// serverLog keeps the child's stderr: the last lines for diagnostics, the
// readiness lines, and a goroutine dump when one comes.
type serverLog struct {
	mu       sync.Mutex
	tail     []string
	ready    chan struct{} // closed at "serving HTTP/3"
	isReady  bool
	metrics  string
	inDump   bool
	dump     []string // the goroutine dump's header and function lines
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
		switch {
		case l.inDump:
			// Headers and function lines, not the file:line ones.
			if !strings.HasPrefix(line, "\t") {
				l.dump = append(l.dump, line)
			}
		case strings.HasPrefix(line, "SIGQUIT: quit"):
			l.inDump = true
		default:
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
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the abuse suite reads the server's memory and files from /proc: Linux only")
	}
	bin := buildServe(t)
	state := filepath.Join(t.TempDir(), "state")
	argv := append([]string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--metrics", "127.0.0.1:0"}, args...)
	cmd := exec.Command(bin, argv...)
	// A SIGQUIT dump lists every goroutine (goroutineDump).
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}),
		log: &serverLog{ready: make(chan struct{}), readDone: make(chan struct{})}}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Serving "); ok {
				urlc <- u
			}
		}
	}()
	go s.log.scan(stderr)
	go func() {
		<-s.log.readDone
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
	s.pool = x509.NewCertPool()
	s.pool.AddCert(cert)
	return s
}

// kill ends the child (if a goroutine dump has not already) and waits.
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		s.t.Fatalf("reading the server's stat: %v", err)
	}
	// Fields after the command name, which may hold spaces: state is
	// field 3, utime and stime are fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clockTicks = 100 // USER_HZ, 100 on every Linux architecture Go supports
	return time.Duration(utime+stime) * time.Second / clockTicks
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
	resp, err := http.Get(s.metrics)
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
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		if v, err := strconv.ParseFloat(line[sp+1:], 64); err == nil {
			out[name] += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// sampler scrapes the server's metrics every interval while an attack
// runs and keeps each one's highest value: gauges such as live
// connections peak during the attack, not after it.
type sampler struct {
	s    *server
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	max     map[string]float64
	samples int
	err     error
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
			sm.samples++
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
	t.Logf("%d metric samples", sm.samples)
	return sm.max
}

// Metric names on the server's /metrics that the suite reads.
const (
	mConns      = "turboretry_quic_connections_active" // HTTP/3 connections accepted, not closed
	mUnvalid    = "turboretry_quic_handshakes_in_flight"
	mRetries    = "turboretry_quic_retries_sent_total"
	mRequests   = "turboretry_http_requests_total"
	mTokensRej  = "turboretry_quic_tokens_rejected_total"
	mTokensAcc  = "turboretry_quic_tokens_accepted_total"
	dumpTimeout = time.Minute
)

// goroutineDump ends the server with SIGQUIT and returns its goroutine
// count and the functions on top of their stacks, most common first. It
// is the last look at a server: call it while the attack is still held.
func (s *server) goroutineDump() (int, []string) {
	s.t.Helper()
	s.alive()
	if err := s.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(dumpTimeout):
		s.t.Fatal("no goroutine dump within a minute")
	}
	s.log.mu.Lock()
	dump := s.log.dump
	s.log.mu.Unlock()
	n := 0
	top := map[string]int{}
	inGoroutine := false
	for _, line := range dump {
		if strings.HasPrefix(line, "goroutine ") {
			n++
			inGoroutine = true
			continue
		}
		if !inGoroutine || line == "" || isRuntimeFrame(line) {
			continue
		}
		// The first frame of our code or the standard library's
		// above the scheduler says what the goroutine waits in.
		if j := strings.LastIndexByte(line, '('); j > 0 {
			line = line[:j]
		}
		top[line]++
		inGoroutine = false
	}
	if n == 0 {
		s.t.Fatalf("the SIGQUIT dump listed no goroutine:\n%s", s.log)
	}
	fns := make([]string, 0, len(top))
	for fn := range top {
		fns = append(fns, fn)
	}
	slices.SortFunc(fns, func(a, b string) int { return top[b] - top[a] })
	for i, fn := range fns {
		fns[i] = fmt.Sprintf("%d %s", top[fn], fn)
	}
	return n, fns
}

// isRuntimeFrame reports whether a dump's function line is the runtime's
// or a blocking primitive's, below what the goroutine is doing.
func isRuntimeFrame(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "internal/", "syscall.", "time.Sleep", "created by "} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// ctxFor is a context for the test, ended at cleanup; the bound only
// keeps a broken build from hanging.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
