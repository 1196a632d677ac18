package doctor

import (
	"os"
	"os/exec"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// TestHostLoopback runs every check on this machine against lo: each one
// answers (no check may be lost to an error), and this kernel (CI runs
// Linux 6.x) has UDP GSO and GRO.
func TestHostLoopback(t *testing.T) {
	rs := Run(Host(), Options{Iface: "lo"})
	for _, r := range rs {
		t.Log(r)
	}
	m := byCheck(rs)
	for _, c := range []string{"udp-gso", "udp-gro", "rmem_max", "wmem_max", "reuseport-bpf", "workers", "xdp-native", "nic-queues", "tx-udp-segmentation"} {
		if _, ok := m[c]; !ok {
			t.Errorf("no %s result", c)
		}
	}
	if m["udp-gso"].Status != OK || m["udp-gro"].Status != OK {
		t.Errorf("UDP offloads: %v / %v", m["udp-gso"], m["udp-gro"])
	}
	if os.Geteuid() == 0 && m["reuseport-bpf"].Status != OK {
		t.Errorf("as root: %v", m["reuseport-bpf"])
	}
	t.Log(Summary(rs))
}

// TestHostVeth: a veth (both ends up) runs XDP natively, and its 2 queues
// against 4 workers get the ethtool -L advice, read from the real driver.
func TestHostVeth(t *testing.T) {
	netnstest.RequireRoot(t, "creating a veth pair")
	ns := netnstest.New(t, "trdoc")
	for _, args := range [][]string{
		{"link", "add", "dca0", "numrxqueues", "2", "numtxqueues", "2", "type", "veth", "peer", "name", "dcb0", "numrxqueues", "2", "numtxqueues", "2"},
		{"link", "set", "dca0", "up"},
		{"link", "set", "dcb0", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var rs []Result
	if err := netnstest.In(ns, func() error { rs = Run(Host(), Options{Iface: "dca0", Workers: 4}); return nil }); err != nil {
		t.Fatal(err)
	}
	m := byCheck(rs)
	for _, r := range rs {
		t.Log(r)
	}
	if m["xdp-native"].Status != OK {
		t.Errorf("veth: %v", m["xdp-native"])
	}
	if q := m["nic-queues"]; q.Status != Fix || q.Fix != "ethtool -L dca0 combined 4" && q.Fix != "serve --workers 2" {
		t.Errorf("veth with 2 queues for 4 workers: %v", q)
	}
}
