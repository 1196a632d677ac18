package doctor

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// fakeSys answers from a fake procfs and a fake ethtool.
type fakeSys struct {
	proc     fstest.MapFS
	gso, gro bool
	features map[string]Feature
	channels Channels
	xdp      XDP
	driver   string
	bpf      error
	cpus     int
}

func (f *fakeSys) ReadFile(name string) ([]byte, error) {
	return fs.ReadFile(f.proc, strings.TrimPrefix(name, "/"))
}
func (f *fakeSys) UDPOffload() (bool, bool, error)             { return f.gso, f.gro, nil }
func (f *fakeSys) Features(string) (map[string]Feature, error) { return f.features, nil }
func (f *fakeSys) Channels(string) (Channels, error)           { return f.channels, nil }
func (f *fakeSys) XDPFeatures(string) (XDP, error)             { return f.xdp, nil }
func (f *fakeSys) Driver(string) (string, error)               { return f.driver, nil }
func (f *fakeSys) ReuseportBPF() error                         { return f.bpf }
func (f *fakeSys) NumCPU() int                                 { return f.cpus }

// tuned is a host where every check passes for 4 workers on eth0.
func tuned() *fakeSys {
	return &fakeSys{
		proc: fstest.MapFS{
			"proc/sys/net/core/rmem_max": {Data: []byte("67108864\n")},
			"proc/sys/net/core/wmem_max": {Data: []byte("67108864\n")},
		},
		gso: true, gro: true,
		features: map[string]Feature{
			"tx-udp-segmentation": {Active: true}, "tx-generic-segmentation": {Active: true}, "rx-gro": {Active: true},
			"rx-gro-list": {Active: true}, "rx-udp-gro-forwarding": {Active: true},
		},
		channels: Channels{Combined: 4, MaxCombined: 8},
		xdp:      XDP{Native: true, Redirect: true, ZeroCopy: true},
		driver:   "mlx5_core",
		cpus:     4,
	}
}

func byCheck(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Check] = r
	}
	return m
}

func TestTunedHostIsOK(t *testing.T) {
	rs := Run(tuned(), Options{Iface: "eth0", Workers: 4})
	if len(rs) != 13 {
		t.Fatalf("%d results, want 13: %v", len(rs), rs)
	}
	for _, r := range rs {
		if r.Status != OK || r.Fix != "" {
			t.Errorf("tuned host: %v", r)
		}
	}
	if s := Summary(rs); s != "13 ok, 0 to fix, 0 info" {
		t.Errorf("Summary = %q", s)
	}
	// Without an interface only the host-wide checks run.
	if rs := Run(tuned(), Options{Workers: 4}); len(rs) != 6 {
		t.Errorf("no interface: %d results, want 6", len(rs))
	}
}

// TestAdvice breaks one thing at a time and checks the concrete fix.
func TestAdvice(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(*fakeSys)
		workers int
		check   string
		status  Status
		fix     string
	}{
		{"rmem_max at the Debian default", func(f *fakeSys) {
			f.proc["proc/sys/net/core/rmem_max"] = &fstest.MapFile{Data: []byte("212992\n")}
		}, 4, "rmem_max", Fix, "sysctl -w net.core.rmem_max=16777216 (persist it in /etc/sysctl.d/99-quic.conf)"},
		{"wmem_max low", func(f *fakeSys) {
			f.proc["proc/sys/net/core/wmem_max"] = &fstest.MapFile{Data: []byte("1048576")}
		}, 4, "wmem_max", Fix, "sysctl -w net.core.wmem_max=16777216 (persist it in /etc/sysctl.d/99-quic.conf)"},
		{"no UDP GSO", func(f *fakeSys) { f.gso = false }, 4, "udp-gso", Fix, "run Linux 4.18 or later (UDP GSO); 6.x recommended"},
		{"no UDP GRO", func(f *fakeSys) { f.gro = false }, 4, "udp-gro", Fix, "run Linux 5.0 or later (UDP GRO); 6.x recommended"},
		{"UDP segmentation off", func(f *fakeSys) { f.features["tx-udp-segmentation"] = Feature{} }, 4,
			"tx-udp-segmentation", Fix, "ethtool -K eth0 tx-udp-segmentation on"},
		{"GRO off", func(f *fakeSys) { f.features["rx-gro"] = Feature{} }, 4, "rx-gro", Fix, "ethtool -K eth0 rx-gro on"},
		{"UDP segmentation fixed off", func(f *fakeSys) { f.features["tx-udp-segmentation"] = Feature{Fixed: true} }, 4,
			"tx-udp-segmentation", Info, ""},
		{"UDP GRO forwarding off", func(f *fakeSys) { f.features["rx-udp-gro-forwarding"] = Feature{} }, 4,
			"rx-udp-gro-forwarding", Info, "ethtool -K eth0 rx-udp-gro-forwarding on"},
		{"GRO list off", func(f *fakeSys) { f.features["rx-gro-list"] = Feature{} }, 4, "rx-gro-list", Info, "ethtool -K eth0 rx-gro-list on"},
		{"feature unknown", func(f *fakeSys) { delete(f.features, "rx-gro-list") }, 4, "rx-gro-list", Info, ""},
		{"no native XDP", func(f *fakeSys) { f.xdp, f.driver = XDP{}, "r8169" }, 4, "xdp-native", Fix,
			"use a NIC whose driver runs XDP natively (mlx5, ice, i40e, ixgbe, bnxt, virtio_net, veth) for --offload xdp"},
		{"no BPF privilege", func(f *fakeSys) { f.bpf = ErrPermission }, 4, "reuseport-bpf", Fix,
			"run serve as root, or: setcap cap_bpf,cap_perfmon,cap_net_admin+ep $(command -v turboretry)"},
		{"no steering here", func(f *fakeSys) { f.bpf = errors.New("not Linux") }, 4, "reuseport-bpf", Info, ""},
		{"fewer queues, more possible", func(f *fakeSys) { f.channels = Channels{Combined: 1, MaxCombined: 8} }, 4,
			"nic-queues", Fix, "ethtool -L eth0 combined 4"},
		{"fewer rx queues", func(f *fakeSys) { f.channels = Channels{RX: 2, MaxRX: 4} }, 4, "nic-queues", Fix, "ethtool -L eth0 rx 4"},
		{"fewer queues than possible workers", func(f *fakeSys) { f.channels = Channels{Combined: 2, MaxCombined: 2} }, 4,
			"nic-queues", Fix, "serve --workers 2"},
		{"more queues", func(f *fakeSys) { f.channels = Channels{Combined: 8, MaxCombined: 8}; f.cpus = 8 }, 4,
			"nic-queues", Info, "serve --workers 8"},
		{"more workers than CPUs", func(f *fakeSys) { f.cpus = 2; f.channels.Combined = 8 }, 8, "workers", Fix, "serve --workers 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := tuned()
			c.breakIt(f)
			rs := Run(f, Options{Iface: "eth0", Workers: c.workers})
			r, ok := byCheck(rs)[c.check]
			if !ok {
				t.Fatalf("no %s result in %v", c.check, rs)
			}
			if r.Status != c.status || r.Fix != c.fix {
				t.Fatalf("%v\nwant status %v, fix %q", r, c.status, c.fix)
			}
			if c.status == Fix && !strings.Contains(Summary(rs), c.check) {
				t.Errorf("Summary %q does not name %s", Summary(rs), c.check)
			}
			for _, other := range rs {
				if other.Check != c.check && other.Status == Fix && c.check != "workers" {
					t.Errorf("breaking %s also flagged %v", c.check, other)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	f := tuned()
	f.proc["proc/sys/net/core/rmem_max"] = &fstest.MapFile{Data: []byte("not a number")}
	delete(f.proc, "proc/sys/net/core/wmem_max")
	m := byCheck(Run(f, Options{}))
	if m["workers"].Detail != "4 workers on 4 CPUs" {
		t.Errorf("default workers: %v", m["workers"])
	}
	if m["rmem_max"].Status != Info || m["wmem_max"].Status != Info {
		t.Errorf("unreadable limits: %v / %v", m["rmem_max"], m["wmem_max"])
	}
	if s := (Result{Check: "x", Status: Fix, Detail: "d", Fix: "f"}).String(); !strings.HasPrefix(s, "FIX ") || !strings.HasSuffix(s, "d -> f") {
		t.Errorf("String = %q", s)
	}
}
