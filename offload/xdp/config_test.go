//go:build linux

package xdp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/fastpath"
)

func TestLoadRejectsBadConfig(t *testing.T) {
	cases := map[string]Config{
		"no port":        {},
		"cid too long":   {Port: 443, CIDLen: fastpath.MaxCIDLen + 1},
		"negative cid":   {Port: 443, CIDLen: -1},
		"negative stale": {Port: 443, StaleAfter: -time.Second},
		"negative queue": {Port: 443, Queues: -1},
		"huge queues":    {Port: 443, Queues: maxQueues + 1},
	}
	for name, cfg := range cases {
		// Validation comes before any BPF call, so this needs no root.
		if p, err := Load(cfg); err == nil || !strings.HasPrefix(err.Error(), "xdp: ") {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("%s: Load error %v, want a validation error", name, err)
		}
	}
	if _, err := Load(Config{}); !errors.Is(err, errNoPort) {
		t.Errorf("no port: %v", err)
	}
}

func TestConfigDefaultsAndMapValue(t *testing.T) {
	key := fastpath.Key{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	cfg, err := Config{Port: 8443, Key: key}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CIDLen != fastpath.DefaultCIDLen || cfg.StaleAfter != DefaultStaleAfter || cfg.Queues != DefaultQueues {
		t.Fatalf("defaults not filled: %+v", cfg)
	}
	v := cfg.mapConfig()
	// k0 and k1 as SipHash's reference code reads a 16-byte key.
	if v.K0 != 0x0807060504030201 || v.K1 != 0x100f0e0d0c0b0a09 {
		t.Errorf("key words %#x %#x", v.K0, v.K1)
	}
	if v.Port != 8443 || v.CidLen != 8 || v.StaleNs != uint64(DefaultStaleAfter) {
		t.Errorf("map value %+v", v)
	}
}

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := range NumReasons {
		name := Reason(r).String()
		if name == "" || seen[name] || strings.HasPrefix(name, "reason(") {
			t.Errorf("reason %d has name %q", r, name)
		}
		seen[name] = true
	}
	if got := Reason(NumReasons).String(); got != fmt.Sprintf("reason(%d)", NumReasons) {
		t.Errorf("out of range: %q", got)
	}
	var c Counters
	c[DropMiss], c[DropMalformed], c[PassHit] = 2, 3, 100
	if c.Dropped() != 5 {
		t.Errorf("Dropped %d", c.Dropped())
	}
}
