package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// The split-mode emulation of docs/split.md, built the way the operator
// would: namespace client (c0 198.18.0.1), namespace dpu (bridge br0
// 198.18.0.254 over the wire port p0 and the host port pf0hpf, the agent's
// control address on br0) and namespace host (h0 198.18.0.2, turboretry
// serve).
const (
	e2eClientIP  = "198.18.0.1"
	e2eHostIP    = "198.18.0.2"
	e2eDPUIP     = "198.18.0.254"
	e2eServeAddr = e2eHostIP + ":4433"
	e2eControl   = e2eDPUIP + ":4434"
	e2eMetrics   = "127.0.0.1:9464" // in each namespace of its own
	e2eClientMAC = "02:00:5e:00:03:01"
	e2eHostMAC   = "02:00:5e:00:03:02"
	e2eBridgeMAC = "02:00:5e:00:03:fe"
	e2eGuard     = 15 * time.Second // hang guard for every wait
)

type e2eNamespaces struct{ client, dpu, host string }

func newE2ENamespaces(t *testing.T) *e2eNamespaces {
	t.Helper()
	netnstest.RequireRoot(t, "the split-mode emulation (network namespaces, BPF, AF_XDP)")
	netnstest.RequireAFXDP(t)
	n := &e2eNamespaces{client: netnstest.New(t, "trse-c"), dpu: netnstest.New(t, "trse-d"), host: netnstest.New(t, "trse-h")}
	netnstest.Veth(t, netnstest.End{NS: n.client, Dev: "c0", MAC: e2eClientMAC}, netnstest.End{NS: n.dpu, Dev: "p0"})
	netnstest.Veth(t, netnstest.End{NS: n.host, Dev: "h0", MAC: e2eHostMAC}, netnstest.End{NS: n.dpu, Dev: "pf0hpf"})
	netnstest.IP(t, "-n", n.dpu, "link", "add", "br0", "address", e2eBridgeMAC, "type", "bridge")
	for _, dev := range []string{"p0", "pf0hpf"} {
		netnstest.IP(t, "-n", n.dpu, "link", "set", dev, "master", "br0")
		netnstest.Up(t, n.dpu, dev, netip.Prefix{})
	}
	netnstest.Up(t, n.dpu, "br0", netip.MustParsePrefix(e2eDPUIP+"/24"))
	netnstest.Up(t, n.client, "c0", netip.MustParsePrefix(e2eClientIP+"/24"))
	netnstest.Up(t, n.host, "h0", netip.MustParsePrefix(e2eHostIP+"/24"))
	netnstest.Neigh(t, n.client, "c0", netip.MustParseAddr(e2eHostIP), e2eHostMAC)
	netnstest.Neigh(t, n.host, "h0", netip.MustParseAddr(e2eClientIP), e2eClientMAC)
	netnstest.Neigh(t, n.host, "h0", netip.MustParseAddr(e2eDPUIP), e2eBridgeMAC)
	// The agent forwards the client's frames byte for byte: they must carry
	// complete UDP checksums, as from a real NIC.
	if err := netnstest.In(n.client, func() error { return netnstest.TXChecksumOff("c0") }); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ ns, dev string }{{n.client, "c0"}, {n.host, "h0"}, {n.dpu, "p0"}, {n.dpu, "pf0hpf"}, {n.dpu, "br0"}} {
		netnstest.WaitUp(t, d.ns, d.dev)
	}
	return n
}

const splitE2EChildEnv = "TURBORETRY_SPLIT_E2E_ARGS"

// TestSplitE2EChild is not a test on its own: TestServeSplitWithAgent runs
// the test binary in a namespace with it selected, to run "turboretry
// agent" and "turboretry serve" as processes of their own, as an operator
// does (and so that every socket of each lives in its namespace).
func TestSplitE2EChild(t *testing.T) {
	args := os.Getenv(splitE2EChildEnv)
	if args == "" {
		t.Skip("helper process of TestServeSplitWithAgent")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, strings.Fields(args), os.Stdout, os.Stderr)
	fmt.Printf("EXIT=%d\n", code)
}

// e2eProcess is a turboretry subcommand running in a namespace.
type e2eProcess struct {
	cmd    *exec.Cmd
	out    serveBuffer   // stdout and stderr
	exited chan struct{} // closed when it ended
}

// startE2EProcess runs the turboretry command line args in namespace ns
// and waits until its output contains ready; Cleanup kills it.
func startE2EProcess(t *testing.T, ns, ready string, args ...string) *e2eProcess {
	t.Helper()
	p := &e2eProcess{exited: make(chan struct{})}
	p.cmd = exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestSplitE2EChild$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), splitE2EChildEnv+"="+strings.Join(args, " "))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	e2eWait(t, args[0]+"'s "+ready, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("%s ended: %s", args[0], p.out.String())
		default:
		}
		return strings.Contains(p.out.String(), ready)
	})
	return p
}

// e2eWait polls cond until it holds (hang guard e2eGuard).
func e2eWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitValue(t, what, e2eGuard, cond, func(ok bool) bool { return ok })
}

// clientUDP opens a UDP socket in the client namespace, closed by Cleanup.
func clientUDP(t *testing.T, n *e2eNamespaces) (*net.UDPConn, error) {
	var udp *net.UDPConn
	err := netnstest.In(n.client, func() (err error) {
		udp, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(e2eClientIP)})
		return err
	})
	if err == nil {
		t.Cleanup(func() { udp.Close() })
	}
	return udp, err
}

// getDemo GETs the demo page from the client namespace on a fresh
// connection with our HTTP/3 client (quicGo false) or quic-go's; the
// handshake may take up to the hang guard (the 5 s default was the
// shortest bound left in the test, on a loaded machine).
func getDemo(t *testing.T, n *e2eNamespaces, quicGo bool) {
	t.Helper()
	tlsConf := &tls.Config{InsecureSkipVerify: true}
	var rt http.RoundTripper
	if quicGo {
		tr := &quicgohttp3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      &quicgo.Config{HandshakeIdleTimeout: e2eGuard},
			Dial: func(ctx context.Context, addr string, tc *tls.Config, conf *quicgo.Config) (*quicgo.Conn, error) {
				udp, err := clientUDP(t, n)
				if err != nil {
					return nil, err
				}
				raddr, err := net.ResolveUDPAddr("udp4", addr)
				if err != nil {
					return nil, err
				}
				qt := &quicgo.Transport{Conn: udp}
				t.Cleanup(func() { _ = qt.Close() })
				return qt.DialEarly(ctx, raddr, tc, conf)
			},
		}
		defer tr.Close()
		rt = tr
	} else {
		tr := &http3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      &quic.Config{HandshakeIdleTimeout: e2eGuard},
			Dial: func(ctx context.Context, addr string, tc *tls.Config, conf *quic.Config) (*quic.Conn, error) {
				udp, err := clientUDP(t, n)
				if err != nil {
					return nil, err
				}
				raddr, err := net.ResolveUDPAddr("udp4", addr)
				if err != nil {
					return nil, err
				}
				return quic.DialEarly(ctx, udp, raddr, tc, conf)
			},
		}
		defer tr.Close()
		rt = tr
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "https://"+e2eServeAddr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET over HTTP/3 (quic-go client: %v): %v", quicGo, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" || !strings.Contains(string(body), "<html") {
		t.Fatalf("GET over HTTP/3 (quic-go client: %v): %d %s, %d bytes, %v", quicGo, resp.StatusCode, resp.Proto, len(body), err)
	}
}

// metricSum adds up the samples of metric name in a Prometheus text body
// whose labels include labels (name, value pairs); -1 when none matches
// or the body does not parse.
func metricSum(body, name string, labels ...string) float64 {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil || fams[name] == nil {
		return -1
	}
	sum, found := 0.0, false
series:
	for _, m := range fams[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}) {
				continue series
			}
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		found = true
	}
	if !found {
		return -1
	}
	return sum
}

// TestServeSplitWithAgent runs the product as an operator does, in the
// split-mode emulation: "turboretry agent" (a process of its own) in dpu,
// "turboretry serve --offload split --agent-control ... --retry always" in
// host. Our and quic-go's HTTP/3 clients GET the demo page from the client
// namespace; the agent sent the Retries and forwarded the validated
// Initials, and the server sent no Retry. With --fastpath mac (the
// default) the agent's fast path passed the server's IDs on their MAC and
// the server announced none of them; with --fastpath bloom (the paper's
// mode) the server announced its IDs and the agent's cache passed them.
// After SIGKILL of the agent, fresh connections still work, now through the
// server's own Retry (fail-open).
//
// The server runs with --retry always, not auto: auto Retries only while
// more than 64 handshakes are in flight, so a single client after the kill
// would connect without the host Retry this test asserts.
func TestServeSplitWithAgent(t *testing.T) {
	for _, fastpath := range []string{"mac", "bloom"} {
		t.Run(fastpath, func(t *testing.T) { serveSplitWithAgent(t, fastpath) })
	}
}

func serveSplitWithAgent(t *testing.T, fastpath string) {
	n := newE2ENamespaces(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.key")
	if code, _, errOut := runCLI("keygen", "-o", secret); code != exitOK {
		t.Fatalf("keygen: %s", errOut)
	}
	agent := startE2EProcess(t, n.dpu, "agent: running", "agent", "--wire", "p0", "--host", "pf0hpf", "--port", "4433",
		"--secret", secret, "--control", e2eControl, "--metrics", e2eMetrics, "--fastpath", fastpath, "--workers", "2")
	if !xdpOn(t, n.dpu, "p0") {
		t.Fatal("no XDP program on p0 while the agent runs")
	}
	pidFile, state := filepath.Join(dir, "serve.pid"), filepath.Join(dir, "state")
	serve := startE2EProcess(t, n.host, "SPKI sha256 (base64): ", "serve", "--addr", e2eServeAddr, "--offload", "split",
		"--agent-control", e2eControl, "--retry", "always", "--metrics", e2eMetrics, "--secret", secret,
		"--state-dir", state, "--fastpath", fastpath, "--workers", "2", "--pid-file", pidFile)
	defer func() {
		if t.Failed() {
			t.Logf("agent output:\n%s\nserver output:\n%s", agent.out.String(), serve.out.String())
		}
	}()

	getDemo(t, n, false)
	getDemo(t, n, true)

	// The agent validated both clients; the server announced their IDs.
	want := []struct {
		name   string
		labels []string
		min    float64
	}{
		{"turboretry_afxdp_frames_total", []string{"direction", "rx", "result", "forwarded"}, 2},
		{"turboretry_split_host_frames_total", []string{"result", "sent"}, 2},
	}
	if fastpath == "bloom" {
		want = append(want, []struct {
			name   string
			labels []string
			min    float64
		}{
			{"turboretry_announce_messages_total", nil, 1},
			{"turboretry_announce_cids_total", nil, 1},
			{"turboretry_xdp_packets_total", []string{"reason", "pass_hit"}, 1},
		}...)
	} else {
		want = append(want, struct {
			name   string
			labels []string
			min    float64
		}{"turboretry_xdp_packets_total", []string{"reason", "pass_mac"}, 1})
	}
	// Counters move after what they count (the announce listener's after
	// the insert that lets the client's packets through): wait for all.
	var agentMetrics string
	e2eWait(t, "the agent's counters of both clients", func() bool {
		agentMetrics = scrape(t, n.dpu, e2eMetrics)
		if metricSum(agentMetrics, "turboretry_agent_packets_total", "verdict", "send_reply", "reason", "retry") < 2 ||
			metricSum(agentMetrics, "turboretry_agent_packets_total", "verdict", "forward") < 2 {
			return false
		}
		for _, m := range want {
			if metricSum(agentMetrics, m.name, m.labels...) < m.min {
				return false
			}
		}
		return true
	})
	for _, m := range want {
		if v := metricSum(agentMetrics, m.name, m.labels...); v < m.min {
			t.Errorf("agent metric %s%v = %v; want at least %v", m.name, m.labels, v, m.min)
		}
	}
	for _, zero := range []struct {
		name   string
		labels []string
	}{{"turboretry_split_host_frames_total", []string{"result", "failed"}}, {"turboretry_announce_rejected_total", nil}} {
		if v := metricSum(agentMetrics, zero.name, zero.labels...); v != 0 {
			t.Errorf("agent metric %s%v = %v; want 0", zero.name, zero.labels, v)
		}
	}
	// The announcer counts a message after writing it.
	var serverMetrics string
	e2eWait(t, "the server's announce counter", func() bool {
		serverMetrics = scrape(t, n.host, e2eMetrics)
		return fastpath != "bloom" || metricSum(serverMetrics, "turboretry_split_announced_cids_total") >= 1
	})
	t.Logf("while the agent ran: agent Retries %v, forwarded Initials %v, announced IDs received %v; server announced %v IDs, sent %v Retries",
		metricSum(agentMetrics, "turboretry_agent_packets_total", "verdict", "send_reply", "reason", "retry"),
		metricSum(agentMetrics, "turboretry_split_host_frames_total", "result", "sent"),
		metricSum(agentMetrics, "turboretry_announce_cids_total"),
		metricSum(serverMetrics, "turboretry_split_announced_cids_total"),
		metricSum(serverMetrics, "turboretry_quic_retries_sent_total"))
	if fastpath == "bloom" {
		if v := metricSum(serverMetrics, "turboretry_split_announced_cids_total"); v < 1 {
			t.Errorf("server: turboretry_split_announced_cids_total = %v; want > 0", v)
		}
	} else if v := metricSum(serverMetrics, "turboretry_split_announce_skipped_total"); v < 2 {
		t.Errorf("server: turboretry_split_announce_skipped_total = %v; want the IDs of both clients", v)
	}
	// With the MAC no packet waits for an announcement; in the cache-only
	// mode the client's first packet to a fresh ID can beat its
	// announcement and is retransmitted (docs/split.md, "Announcement
	// race").
	if v := metricSum(agentMetrics, "turboretry_xdp_packets_total", "reason", "drop_miss"); fastpath == "mac" && v != 0 {
		t.Errorf("agent: %v benign packets dropped as unknown", v)
	} else if v != 0 {
		t.Logf("agent: %v packets dropped before their announcement arrived", v)
	}
	if v := metricSum(serverMetrics, "turboretry_quic_retries_sent_total"); v != 0 {
		t.Errorf("server: turboretry_quic_retries_sent_total = %v while the agent runs; want 0", v)
	}

	// A restart behind the agent (docs/operations.md): a new process (the
	// same binary, this test's) takes over and the old one exits once its
	// connections are done. New clients get the agent's Retry, whose SCID
	// is of generation 0: the steering program gives their next Initial
	// to the new generation, which validates the agent's token.
	e2eWait(t, "the pid file", func() bool { _, err := readPIDFile(pidFile); return err == nil })
	if code, out, errOut := runCLI("restart", "--pid-file", pidFile, "--state-dir", state); code != exitOK {
		t.Fatalf("restart behind the agent: exit %d: %s%s", code, out, errOut)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	successor, err := readPIDFile(pidFile)
	if err != nil || successor == serve.cmd.Process.Pid {
		t.Fatalf("the pid file names %d (%v) after the restart", successor, err)
	}
	t.Cleanup(func() {
		if running(successor) {
			_ = syscall.Kill(successor, syscall.SIGKILL)
		}
	})
	// Its process, not serve.exited: the successor holds the output pipe.
	e2eWait(t, "the old serve to exit after handing over", func() bool { return !running(serve.cmd.Process.Pid) })
	getDemo(t, n, false)
	getDemo(t, n, true)
	// The new process accepted the agent's Retry tokens: it sent none.
	if v := metricSum(scrape(t, n.host, e2eMetrics), "turboretry_quic_retries_sent_total"); v != 0 {
		t.Errorf("the restarted server sent %v Retries while the agent runs; want 0", v)
	}

	// SIGKILL: the kernel removes the program and the server's own Retry
	// takes over.
	if err := agent.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e2eWait(t, "the kernel to remove the XDP program from p0", func() bool { return !xdpOn(t, n.dpu, "p0") })
	getDemo(t, n, false)
	getDemo(t, n, true)
	serverMetrics = scrape(t, n.host, e2eMetrics)
	t.Logf("after the kill: server sent %v Retries", metricSum(serverMetrics, "turboretry_quic_retries_sent_total"))
	if v := metricSum(serverMetrics, "turboretry_quic_retries_sent_total"); v < 2 {
		t.Errorf("server after the kill: turboretry_quic_retries_sent_total = %v; want its own Retry for both clients", v)
	}

	// SIGTERM: the server (the successor) shuts down gracefully and
	// exits 0, as its predecessor did after the handover.
	if err := syscall.Kill(successor, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e2eWait(t, "serve to exit after SIGTERM", func() bool { return !running(successor) })
	// The EXIT lines reach serve.out through a pipe copied on another
	// goroutine, which the successor held too: the copy is complete once
	// the first process's Wait returned (serve.exited), not when the
	// successor is gone.
	select {
	case <-serve.exited:
	case <-time.After(e2eGuard):
		t.Fatal("the serve processes' output did not end after both exited")
	}
	if n := strings.Count(serve.out.String(), "EXIT=0"); n != 2 {
		t.Errorf("%d of the two serve processes exited 0", n)
	}
}
