package fileserver

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestOffloadConfigRefused: every offload configuration the server cannot
// run safely fails in New with a message naming the problem.
func TestOffloadConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  OffloadConfig
		want string
	}{
		{"window below idle timeout", OffloadConfig{Mode: OffloadXDP, Iface: "eth0", RotateEvery: 10 * time.Second}, "shorter than the QUIC idle timeout"},
		{"window just below", OffloadConfig{Mode: OffloadXDP, Iface: "eth0", RotateEvery: QUICIdleTimeout - time.Millisecond}, "T_W"},
		{"xdp without iface", OffloadConfig{Mode: OffloadXDP}, "needs --iface"},
		{"iface without xdp", OffloadConfig{Iface: "eth0"}, "needs --offload xdp"},
		{"unknown mode", OffloadConfig{Mode: 7, Iface: "eth0"}, "invalid offload mode"},
		{"negative stale", OffloadConfig{Mode: OffloadXDP, Iface: "eth0", StaleAfter: -time.Second}, "negative"},
		{"split without agent", OffloadConfig{Mode: OffloadSplit}, "needs --agent-control"},
		{"split with iface", OffloadConfig{Mode: OffloadSplit, Iface: "eth0", AgentControl: netip.MustParseAddrPort("127.0.0.1:9")}, "agent owns the interfaces"},
		{"agent without split", OffloadConfig{AgentControl: netip.MustParseAddrPort("127.0.0.1:9")}, "needs --offload split"},
		{"agent with xdp", OffloadConfig{Mode: OffloadXDP, Iface: "eth0", AgentControl: netip.MustParseAddrPort("127.0.0.1:9")}, "needs --offload split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Addr: "127.0.0.1:0", StateDir: t.TempDir(), Offload: tc.off})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOffloadConfigAccepted: the default window and longer ones pass the
// check (Start itself needs root and runs in the namespace tests).
func TestOffloadConfigAccepted(t *testing.T) {
	for _, c := range []OffloadConfig{
		{},
		{Mode: OffloadXDP, Iface: "eth0"},
		{Mode: OffloadXDP, Iface: "eth0", RotateEvery: QUICIdleTimeout},
		{Mode: OffloadXDP, Iface: "eth0", RotateEvery: time.Minute, StaleAfter: time.Second},
		{Mode: OffloadSplit, AgentControl: netip.MustParseAddrPort("198.18.1.1:4434")},
	} {
		if err := c.check(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestNoOffloadPauseResume: without an offload the operator hooks report
// that nothing runs, and /metrics still serves the registry.
func TestNoOffloadPauseResume(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	if ts.PauseOffload() || ts.ResumeOffload() {
		t.Fatal("PauseOffload/ResumeOffload report an offload that was never configured")
	}
	_, h1 := ts.clients(t)
	resp, body := get(t, h1, "GET", "http://"+ts.MetricsAddr().String()+"/metrics")
	if resp.StatusCode != 200 || !strings.Contains(body, "# TYPE") {
		t.Fatalf("/metrics: %d, %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, h1, "POST", "http://"+ts.MetricsAddr().String()+"/metrics"); resp.StatusCode != 405 {
		t.Fatalf("POST /metrics: %d, want 405", resp.StatusCode)
	}
}

// FuzzParseOffloadMode: any input parses to a mode whose String is the
// input, or fails with a helpful error; never a panic.
func FuzzParseOffloadMode(f *testing.F) {
	for _, s := range []string{"none", "xdp", "split", "", "XDP", "xdp\x00", "dpu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseOffloadMode(s)
		if err != nil {
			if !strings.Contains(err.Error(), "want none, xdp or split") {
				t.Fatalf("unhelpful error %q", err)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseOffloadMode(%q) = %v", s, m)
		}
	})
}
