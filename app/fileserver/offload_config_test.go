package fileserver

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/host"
)

// TestOffloadConfigRefused: an offload configuration the server cannot run
// safely fails in New with host.Config.Check's message, measured against
// the listener's idle timeout (the full table is offload/host's).
func TestOffloadConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  host.Config
		want string
	}{
		{"window just below the idle timeout", host.Config{Mode: host.ModeXDP, Iface: "eth0", RotateEvery: QUICIdleTimeout - time.Millisecond},
			"T_W (29.999s) is shorter than the QUIC idle timeout (30s)"},
		// A smaller idle timeout in the config does not count: the
		// listener's is fixed.
		{"idle timeout set lower", host.Config{Mode: host.ModeXDP, Iface: "eth0", RotateEvery: 10 * time.Second, IdleTimeout: time.Second},
			"T_W (10s) is shorter than the QUIC idle timeout (30s)"},
		{"xdp without iface", host.Config{Mode: host.ModeXDP}, "needs --iface"},
		{"agent with xdp", host.Config{Mode: host.ModeXDP, Iface: "eth0", AgentControl: netip.MustParseAddrPort("127.0.0.1:9")}, "needs --offload split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Addr: "127.0.0.1:0", StateDir: t.TempDir(), Offload: tc.off})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
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
