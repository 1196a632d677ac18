package eval

import (
	"slices"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	good := func() Config {
		c := Quick()
		c.Out, c.Turboretry, c.QuicGoServer = t.TempDir(), []string{"turboretry"}, []string{"quicgo"}
		return c
	}
	c := good()
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Variants, AllVariants) {
		t.Errorf("default variants %v", c.Variants)
	}
	c = good()
	c.QuicGoServer = nil
	if err := c.check(); err != nil || slices.Contains(c.Variants, QuicGo) {
		t.Errorf("without a quic-go server: %v, variants %v", err, c.Variants)
	}
	c = good()
	c.TwoQueues = true
	if err := c.check(); err != nil || !slices.Contains(c.Variants, XDP2Q) || !slices.Contains(c.Variants, Split2Q) {
		t.Errorf("two queues: %v, variants %v", err, c.Variants)
	}
	for name, mod := range map[string]func(*Config){
		"no out":         func(c *Config) { c.Out = "" },
		"no turboretry":  func(c *Config) { c.Turboretry = nil },
		"no runs":        func(c *Config) { c.Runs = 0 },
		"empty ladder":   func(c *Config) { c.Ladder = nil },
		"falling ladder": func(c *Config) { c.Ladder = []float64{0, 20, 10} },
		"negative rate":  func(c *Config) { c.Ladder = []float64{-1} },
		"no benign":      func(c *Config) { c.BenignRate = 0 },
		"loss of 1":      func(c *Config) { c.MaxLoss = 1 },
		"no server CPU":  func(c *Config) { c.ServerCPUs = nil },
		"nice":           func(c *Config) { c.Nice = -21 },
		"negative procs": func(c *Config) { c.GoMaxProcs = -1 },
	} {
		c := good()
		mod(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if Full().Runs != 3 || !Full().TwoQueues || Quick().Runs != 1 {
		t.Error("Full and Quick presets changed")
	}
	for _, v := range append(slices.Clone(AllVariants), XDP2Q, Split2Q) {
		if v.Label() == string(v) {
			t.Errorf("%s has no label", v)
		}
	}
	if HostAuto.FloodMode() != "pool" || XDP.FloodMode() != "random-cids" || !Split2Q.Split() || XDP2Q.Queues() != 2 || !XDP.Agent() || HostAlways.Agent() {
		t.Error("variant properties")
	}
}
