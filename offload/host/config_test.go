package host

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/fastpath"
)

// TestCheckRefused: every offload configuration that cannot run safely
// fails Check with a message naming the problem.
func TestCheckRefused(t *testing.T) {
	ctl := netip.MustParseAddrPort("127.0.0.1:9")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"window below idle timeout", Config{Mode: ModeXDP, Iface: "eth0", RotateEvery: 10 * time.Second}, "T_W (10s) is shorter than the QUIC idle timeout (30s)"},
		{"window just below", Config{Mode: ModeXDP, Iface: "eth0", RotateEvery: DefaultIdleTimeout - time.Millisecond}, "T_W"},
		{"default window below a longer idle timeout", Config{Mode: ModeXDP, Iface: "eth0", IdleTimeout: time.Minute}, "T_W (30s) is shorter than the QUIC idle timeout (1m0s)"},
		{"xdp without iface", Config{Mode: ModeXDP}, "needs --iface"},
		{"iface without xdp", Config{Iface: "eth0"}, "needs --offload xdp"},
		{"unknown mode", Config{Mode: 7, Iface: "eth0"}, "invalid offload mode"},
		{"negative stale", Config{Mode: ModeXDP, Iface: "eth0", StaleAfter: -time.Second}, "negative"},
		{"negative idle timeout", Config{Mode: ModeXDP, Iface: "eth0", IdleTimeout: -time.Second}, "negative"},
		{"split without agent", Config{Mode: ModeSplit}, "needs --agent-control"},
		{"split with iface", Config{Mode: ModeSplit, Iface: "eth0", AgentControl: ctl}, "agent owns the interfaces"},
		{"agent without split", Config{AgentControl: ctl}, "needs --offload split"},
		{"agent with xdp", Config{Mode: ModeXDP, Iface: "eth0", AgentControl: ctl}, "needs --offload split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCheckAccepted: the default window and longer ones pass.
func TestCheckAccepted(t *testing.T) {
	for _, c := range []Config{
		{},
		{Mode: ModeXDP, Iface: "eth0"},
		{Mode: ModeXDP, Iface: "eth0", RotateEvery: DefaultIdleTimeout},
		{Mode: ModeXDP, Iface: "eth0", RotateEvery: time.Minute, StaleAfter: time.Second, IdleTimeout: time.Minute},
		{Mode: ModeXDP, Iface: "eth0", IdleTimeout: fastpath.DefaultWindow},
		{Mode: ModeSplit, AgentControl: netip.MustParseAddrPort("198.18.1.1:4434")},
	} {
		if err := c.Check(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// FuzzParseMode: any input parses to a mode whose String is the input, or
// fails with a helpful error; never a panic.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"none", "xdp", "split", "", "XDP", "xdp\x00", "dpu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			if !strings.Contains(err.Error(), "want none, xdp or split") {
				t.Fatalf("unhelpful error %q", err)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseMode(%q) = %v", s, m)
		}
	})
}
