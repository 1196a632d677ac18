package main

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// TestAgentRuns starts "turboretry agent" in-process in a namespace with a
// wire and a host port: it prints its one-line summary, attaches the XDP
// program to the wire port, serves the agent's metrics, reloads the secret
// on SIGHUP (and keeps the old one when the file is bad), and on
// cancellation exits 0 with the program gone.
func TestAgentRuns(t *testing.T) {
	netnstest.RequireRoot(t, "the agent command (network namespaces, BPF, AF_XDP)")
	netnstest.RequireAFXDP(t)
	ns := netnstest.New(t, "trag")
	netnstest.Veth(t, netnstest.End{NS: ns, Dev: "p0"}, netnstest.End{NS: ns, Dev: "c0"})
	netnstest.Veth(t, netnstest.End{NS: ns, Dev: "pf0hpf"}, netnstest.End{NS: ns, Dev: "h0"})
	for _, dev := range []string{"p0", "pf0hpf", "h0"} {
		netnstest.Up(t, ns, dev, netip.Prefix{})
	}
	netnstest.Up(t, ns, "c0", netip.MustParsePrefix("198.18.0.254/24"))
	secret := filepath.Join(t.TempDir(), "secret.key")
	if code, _, errOut := runCLI("keygen", "-o", secret); code != exitOK {
		t.Fatalf("keygen: %s", errOut)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut serveBuffer
	exit := make(chan int, 1)
	go func() {
		_ = netnstest.In(ns, func() error {
			exit <- run(ctx, []string{"agent", "--wire", "p0", "--host", "pf0hpf", "--port", "4433", "--secret", secret,
				"--control", "198.18.0.254:4434", "--metrics", "127.0.0.1:0"}, &out, &errOut)
			return nil
		})
	}()
	var summary string
	serveWait(t, "the summary line", func() bool {
		select {
		case code := <-exit:
			t.Fatalf("agent exited %d:\n%s", code, errOut.String())
		default:
		}
		for line := range strings.Lines(errOut.String()) {
			if strings.Contains(line, "agent: running") {
				summary = line
				return true
			}
		}
		return false
	})
	for _, want := range []string{"wire=p0", "host=pf0hpf", "port=4433", "control=198.18.0.254:4434", "rotate=30s", "idle_timeout=30s"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
	if !xdpOn(t, ns, "p0") {
		t.Error("no XDP program on p0 while the agent runs")
	}

	m := regexp.MustCompile(`metrics=http://([0-9.:]+)/metrics`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("summary names no metrics address: %s", summary)
	}
	body := scrape(t, ns, m[1])
	for _, want := range []string{"turboretry_agent_packets_total", "turboretry_xdp_packets_total", "turboretry_split_host_frames_total", "go_goroutines", "process_cpu_seconds_total"} {
		if metricSum(body, want) < 0 {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	if v := metricSum(body, "turboretry_announce_messages_total"); v != 0 {
		t.Errorf("turboretry_announce_messages_total = %v before any announcement, want 0", v)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	serveWait(t, "the reload", func() bool { return strings.Contains(errOut.String(), "SIGHUP: secret reloaded") })
	if err := os.WriteFile(secret, []byte("not a secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	serveWait(t, "the refused reload", func() bool { return strings.Contains(errOut.String(), "secret not reloaded; keeping the old one") })

	cancel()
	if code := <-exit; code != exitOK {
		t.Errorf("exit %d:\n%s", code, errOut.String())
	}
	if xdpOn(t, ns, "p0") {
		t.Error("the XDP program stayed on p0 after the agent stopped")
	}
}

// TestAgentMissingInterface: a wire port that does not exist fails with
// exit 1 and a message naming it.
func TestAgentMissingInterface(t *testing.T) {
	netnstest.RequireRoot(t, "the agent command (network namespaces)")
	ns := netnstest.New(t, "trag")
	secret := filepath.Join(t.TempDir(), "secret.key")
	if code, _, errOut := runCLI("keygen", "-o", secret); code != exitOK {
		t.Fatalf("keygen: %s", errOut)
	}
	var code int
	var errOut serveBuffer
	_ = netnstest.In(ns, func() error {
		code = run(context.Background(), []string{"agent", "--wire", "nowire0", "--host", "nohost0", "--secret", secret,
			"--control", "127.0.0.1:4434"}, io.Discard, &errOut)
		return nil
	})
	if code != exitFail || !strings.Contains(errOut.String(), "no such interface") || !strings.Contains(errOut.String(), "nohost0") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// xdpOn reports whether dev in ns has an XDP program.
func xdpOn(t *testing.T, ns, dev string) bool {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-d", "link", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show: %v: %s", err, out)
	}
	return strings.Contains(string(out), "prog/xdp")
}

// scrape fetches /metrics from addr inside ns and returns the body.
func scrape(t *testing.T, ns, addr string) string {
	t.Helper()
	var body []byte
	err := netnstest.In(ns, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.0\r\nHost: agent\r\n\r\n"); err != nil {
			return err
		}
		body, err = io.ReadAll(c)
		return err
	})
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	head, payload, ok := strings.Cut(string(body), "\r\n\r\n")
	if !ok || !strings.HasPrefix(head, "HTTP/1.0 200 ") {
		t.Fatalf("scraping %s: %q", addr, body)
	}
	return payload
}
