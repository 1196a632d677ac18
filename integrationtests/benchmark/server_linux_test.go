package benchmark

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/quic"
)

// variant is one server under test.
type variant string

const (
	quicGoRetry variant = "a-quicgo-retry"     // quic-go, VerifySourceAddress always true
	hostRetry   variant = "b-host-retry"       // our stack, Retry always, no offload
	hostNoRetry variant = "b-host-noretry"     // our stack, Retry never (latency baseline)
	xdpAgent    variant = "c-xdp-retry-always" // our stack behind the integrated XDP agent
	// splitAgent, (d), is in split_linux_test.go.
)

// The server runs in a child process started in the server namespace
// (ip netns exec): every thread, socket and the XDP attachment then live
// there, and the namespace dies with it. TestMain turns the test binary
// into that child when helperEnv names a variant.
const (
	helperEnv = "TURBORETRY_BENCH_SERVER"
	dirEnv    = "TURBORETRY_BENCH_DIR"
)

func TestMain(m *testing.M) {
	if v := os.Getenv(helperEnv); v != "" {
		if err := serveVariant(variant(v), os.Getenv(dirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "bench server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(agentEnv); dir != "" {
		if err := runBenchAgent(dir); err != nil {
			fmt.Fprintln(os.Stderr, "bench agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveVariant serves until stdin closes (the parent ended or is done).
func serveVariant(v variant, dir string) error {
	if !slices.Contains([]variant{quicGoRetry, hostRetry, hostNoRetry, xdpAgent, splitAgent, workers1, workers2}, v) {
		return fmt.Errorf("unknown variant %q", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	addr := netip.AddrPortFrom(ipServer, serverPort).String()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if v == quicGoRetry {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		defer pc.Close()
		// Always true: every Initial without a token gets a Retry.
		tr := &quicgo.Transport{Conn: pc, VerifySourceAddress: func(net.Addr) bool { return true }}
		defer tr.Close()
		ln, err := tr.ListenEarly(quicgohttp3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}), &quicgo.Config{Allow0RTT: true})
		if err != nil {
			return err
		}
		srv := &quicgohttp3.Server{Handler: http.FileServerFS(fileserver.DemoFS())}
		go func() {
			<-ctx.Done()
			srv.Close()
			ln.Close()
		}()
		if err := srv.ServeListener(ln); !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
			return err
		}
		return nil
	}
	// One worker, as the figures in docs/offload.md were measured; the
	// worker benchmarks (workers_linux_test.go) vary it.
	cfg := fileserver.Config{Addr: addr, CertFile: certFile, KeyFile: keyFile, StateDir: dir, Retry: fileserver.RetryAlways,
		MetricsAddr: netip.AddrPortFrom(ipServer, metricsPort).String(), Workers: 1}
	// Without admission by source prefix: the floods come from a few
	// addresses, and the figures measure the host's cost per Initial, not
	// the per-prefix rate limit (docs/abuse.md).
	lim := fileserver.DefaultLimits()
	lim.PrefixAdmission = false
	cfg.Limits = &lim
	switch v {
	case hostRetry:
	case hostNoRetry:
		cfg.Retry = fileserver.RetryNever
	case xdpAgent:
		cfg.Offload = host.Config{Mode: host.ModeXDP, Iface: serverIf}
	case splitAgent:
		splitServerConfig(&cfg, dir)
	case workers1, workers2:
		cfg.Retry, cfg.Workers = fileserver.RetryNever, workersOf(v)
		root, err := writeBulk(dir)
		if err != nil {
			return err
		}
		cfg.Root = root
	}
	s, err := fileserver.New(cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// metricsPort serves our variants' /metrics, so the benchmarks can tell
// who sent the Retries.
const metricsPort = 9464

// retries scrapes /metrics from the client namespace (and, for (d), the
// agent's from the dpu namespace) and returns the Retries the host's QUIC
// stack and the agent sent; ok is false for a server without metrics
// (quic-go).
func (s *benchServer) retries() (host, agentSent float64, ok bool) {
	body, err := scrape(s.net, s.net.client, netip.AddrPortFrom(ipServer, metricsPort))
	if err != nil {
		return 0, 0, false
	}
	if host, agentSent, err = parseRetries(body); err != nil {
		return 0, 0, false
	}
	if s.agentPID > 0 {
		body, err := scrape(s.net, s.net.dpu, agentMetrics)
		if err != nil {
			return 0, 0, false
		}
		if _, agentSent, err = parseRetries(body); err != nil {
			return 0, 0, false
		}
	}
	return host, agentSent, true
}

// parseRetries sums the host's and the agent's Retry counters in a
// Prometheus text body.
func parseRetries(body string) (host, agentSent float64, err error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	for _, m := range fams["turboretry_quic_retries_sent_total"].GetMetric() {
		host += m.GetCounter().GetValue()
	}
	for _, m := range fams["turboretry_agent_packets_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == "retry" {
				agentSent += m.GetCounter().GetValue()
			}
		}
	}
	return host, agentSent, nil
}

// benchServer is a running server variant seen from the client side.
type benchServer struct {
	net *benchNet
	tls *tls.Config // trusts the server's certificate
	url string
	pid int // the server process (ip netns exec replaces itself with it)
	// agentPID is variant (d)'s agent process, 0 otherwise.
	agentPID int
}

// startServer writes a certificate, starts the child in the server
// namespace and waits until a request from the client namespace
// succeeds. Cleanup closes the child's stdin and waits for it.
func startServer(tb testing.TB, n *benchNet, v variant) *benchServer {
	tb.Helper()
	dir := tb.TempDir()
	pool := testcert.WriteFiles(tb, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	agentPID := 0
	if v == splitAgent {
		agentPID = startAgent(tb, n, dir) // before the server, which announces to it
	}
	cmd := exec.Command("ip", "netns", "exec", n.server, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(v), dirEnv+"="+dir)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	stdin, err := cmd.StdinPipe()
	must(tb, err)
	must(tb, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	s := &benchServer{net: n, tls: &tls.Config{RootCAs: pool, ServerName: "localhost"},
		url: "https://" + netip.AddrPortFrom(ipServer, serverPort).String() + "/", pid: cmd.Process.Pid, agentPID: agentPID}
	// Loading the XDP program and the AF_XDP sockets takes a moment.
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			tb.Fatalf("server %s exited: %v\n%s", v, err, logs.String())
		default:
		}
		if _, err := s.get(2 * time.Second); err == nil {
			return s
		} else if time.Now().After(deadline) {
			tb.Fatalf("server %s never answered: %v\n%s", v, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dial opens a QUIC connection from the client namespace (the transport
// dials on goroutines of its own, so the namespace is entered per dial).
func (s *benchServer) dial(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (c *quic.Conn, err error) {
	err = s.net.in(s.net.client, func() error {
		c, err = quic.DialAddrEarly(ctx, addr, tc, qc)
		return err
	})
	return c, err
}

// get fetches the index page on a fresh connection with our HTTP/3
// client, within limit, and returns the time to the response header.
func (s *benchServer) get(limit time.Duration) (time.Duration, error) {
	tr := &http3.Transport{TLSClientConfig: s.tls.Clone(), Dial: s.dial}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.url, nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	ttfb := time.Since(start)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	body, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<html") {
		return 0, fmt.Errorf("GET %s: %d, %d bytes", s.url, resp.StatusCode, len(body))
	}
	return ttfb, nil
}
