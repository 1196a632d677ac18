package benchmark

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/app/fileserver"
	appmetrics "github.com/turboretry/turboretry/app/metrics"
	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/split"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// splitAgent is variant (d): our server with --offload split behind a
// turboretry agent process in a dpu namespace (docs/split.md). Its network
// puts that namespace between the client bridge and the server: the client
// bridge's cs0 is the peer of p0 (the wire port, where the agent's XDP
// program sits), a bridge in dpu joins p0 and pf0hpf, and pf0hpf is the
// peer of the server's srv0. Everything reaching the server, flood and
// benign traffic, crosses p0 first.
const splitAgent variant = "d-split-agent"

// The dpu namespace's addresses: the agent's control address (where the
// server announces its connection IDs) and its /metrics sit on the bridge.
var (
	ipDPU        = netip.MustParseAddr("198.18.0.254")
	macDPU       = "02:00:5e:00:12:fe"
	wireIf       = "p0"
	hostIf       = "pf0hpf"
	agentControl = netip.AddrPortFrom(ipDPU, 4434)
	agentMetrics = netip.AddrPortFrom(ipDPU, 9465)
)

// The agent runs in a child process started in the dpu namespace, like the
// server (TestMain): agentEnv names the directory holding the shared root
// secret, and the child prints agentReadyLine once the program is attached.
const (
	agentEnv       = "TURBORETRY_BENCH_AGENT"
	agentReadyLine = "bench agent ready"
	secretName     = "secret.key"
)

// newSplitBenchNet creates the network of variant (d).
func newSplitBenchNet(tb testing.TB) *benchNet { return buildBenchNet(tb, true) }

// netFor creates the network variant v runs in.
func netFor(tb testing.TB, v variant) *benchNet {
	tb.Helper()
	if v == splitAgent {
		return newSplitBenchNet(tb)
	}
	return newBenchNet(tb)
}

// addDPU links the client bridge to the server through the dpu namespace:
// cs0 <-> p0, bridge br0 over p0 and pf0hpf, pf0hpf <-> srv0.
func addDPU(tb testing.TB, n *benchNet) {
	tb.Helper()
	c, s, d := n.client, n.server, n.dpu
	netnstest.Veth(tb, netnstest.End{NS: c, Dev: "cs0"}, netnstest.End{NS: d, Dev: wireIf})
	netnstest.Veth(tb, netnstest.End{NS: d, Dev: hostIf}, netnstest.End{NS: s, Dev: serverIf, MAC: macServer})
	netnstest.IP(tb, "-n", d, "link", "add", "br0", "address", macDPU, "type", "bridge", "stp_state", "0", "forward_delay", "0")
	for _, l := range []string{wireIf, hostIf} {
		netnstest.IP(tb, "-n", d, "link", "set", l, "master", "br0")
		netnstest.Up(tb, d, l, netip.Prefix{})
	}
	netnstest.Up(tb, d, "br0", netip.PrefixFrom(ipDPU, 24))
	netnstest.Neigh(tb, d, "br0", ipServer, macServer)
	// The server announces its connection IDs to the control address
	// through pf0hpf (no program there), the card's host-DPU channel.
	netnstest.Neigh(tb, s, serverIf, ipDPU, macDPU)
}

// waitDPU waits for the dpu namespace's links, once their peers are up.
func waitDPU(tb testing.TB, n *benchNet) {
	tb.Helper()
	for _, l := range []string{wireIf, hostIf, "br0"} {
		netnstest.WaitUp(tb, n.dpu, l)
	}
}

// writeSecret puts a fresh root secret into dir for the server and the
// agent to share (each accepts the other's tokens, and the control
// channel's key derives from it).
func writeSecret(tb testing.TB, dir string) {
	tb.Helper()
	secret, err := token.GenerateSecret()
	must(tb, err)
	must(tb, os.WriteFile(filepath.Join(dir, secretName), []byte(token.FormatSecret(secret)), 0o600))
}

// splitServerConfig makes cfg variant (d)'s host: --offload split with
// the agent's control address and the shared secret from dir.
func splitServerConfig(cfg *fileserver.Config, dir string) {
	cfg.SecretFile = filepath.Join(dir, secretName)
	cfg.Offload = host.Config{Mode: host.ModeSplit, AgentControl: agentControl}
}

// runBenchAgent is the agent child: what `turboretry agent --wire p0
// --host pf0hpf --port 4433 --control 198.18.0.254:4434 --metrics ...`
// runs, until stdin closes.
func runBenchAgent(dir string) error {
	root, err := token.ReadSecretFile(filepath.Join(dir, secretName))
	if err != nil {
		return err
	}
	kr, err := token.NewKeyRing(root, 0)
	if err != nil {
		return err
	}
	// The host's IDs in serve's default layout, MAC keyed from the secret.
	key := quiclb.KeyFromRing(kr)
	ids, err := quiclb.NewCodec(quiclb.Config{MACKey: &key})
	if err != nil {
		return err
	}
	a, err := split.Start(split.Config{
		WireIface: wireIf,
		HostIface: hostIf,
		Port:      serverPort,
		KeyRing:   kr,
		IDs:       ids,
		Control:   agentControl,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", agentMetrics.String())
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(appmetrics.NewSplitAgentCollector(a.Stats))
	srv := &http.Server{Handler: appmetrics.Handler(reg, slog.New(slog.DiscardHandler)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Println(agentReadyLine)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// startAgent writes the shared secret into dir and starts the agent child
// in the dpu namespace; it returns once the program is attached, with the
// agent's pid. Cleanup closes the child's stdin and waits for it.
func startAgent(tb testing.TB, n *benchNet, dir string) int {
	tb.Helper()
	if n.dpu == "" {
		tb.Fatal("the split variant needs the dpu namespace (newSplitBenchNet)")
	}
	writeSecret(tb, dir)
	cmd := exec.Command("ip", "netns", "exec", n.dpu, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), agentEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	must(tb, err)
	var logs strings.Builder
	cmd.Stderr = &logs
	stdin, err := cmd.StdinPipe()
	must(tb, err)
	must(tb, cmd.Start())
	exited := make(chan error, 1)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if sc.Text() == agentReadyLine && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		exited <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			<-exited
			tb.Fatalf("agent exited before it was ready: %s", logs.String())
		}
	case <-time.After(20 * time.Second):
		tb.Fatalf("agent never got ready: %s", logs.String())
	}
	return cmd.Process.Pid
}

// scrape fetches /metrics at addr from namespace ns.
func scrape(n *benchNet, ns string, addr netip.AddrPort) (string, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (c net.Conn, err error) {
		err = n.in(ns, func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, a)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("http://" + addr.String() + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New("/metrics: " + resp.Status)
	}
	return string(body), nil
}
