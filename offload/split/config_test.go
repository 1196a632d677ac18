package split

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/token"
)

// TestConfigChecks: Start refuses every invalid Config with ErrConfig and
// a message naming the problem, before touching any interface; a valid
// one gets its defaults.
func TestConfigChecks(t *testing.T) {
	kr := testutil.KeyRing(t, make([]byte, token.SecretLen))
	good := Config{WireIface: "p0", HostIface: "pf0hpf", Port: 443, KeyRing: kr, Control: netip.MustParseAddrPort("198.18.0.254:4434")}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no wire", func(c *Config) { c.WireIface = "" }, "no wire interface"},
		{"no host", func(c *Config) { c.HostIface = "" }, "no host interface"},
		{"same port", func(c *Config) { c.HostIface = "p0" }, "both p0"},
		{"no port", func(c *Config) { c.Port = 0 }, "no port"},
		{"no key ring", func(c *Config) { c.KeyRing = nil }, "no key ring"},
		{"no control", func(c *Config) { c.Control = netip.AddrPort{} }, "control address"},
		{"control port 0", func(c *Config) { c.Control = netip.MustParseAddrPort("198.18.0.254:0") }, "control address"},
		{"CID length", func(c *Config) { c.CIDLen = 21 }, "connection ID length 21"},
		{"negative", func(c *Config) { c.StaleAfter = -1 }, "negative"},
		{"T_W below idle", func(c *Config) { c.RotateEvery = 10 * time.Second }, "T_W (10s) is shorter than the QUIC idle timeout (30s)"},
		{"idle above default T_W", func(c *Config) { c.IdleTimeout = time.Minute }, "T_W (30s) is shorter than the QUIC idle timeout (1m0s)"},
	} {
		cfg := good
		tc.mod(&cfg)
		a, err := Start(cfg)
		if a != nil {
			a.Close()
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrConfig with %q", tc.name, err, tc.want)
		}
	}
	c, err := good.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.CIDLen != 8 || c.RotateEvery != DefaultRotateEvery || c.IdleTimeout != DefaultIdleTimeout || c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
}
