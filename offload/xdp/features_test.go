//go:build linux

package xdp

import (
	"errors"
	"net"
	"os/exec"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// TestQueryDriverFeatures: a veth pair supports native XDP with redirect
// (the drivers the namespace tests attach to), and an unknown ifindex is
// an error, not a zero answer.
func TestQueryDriverFeatures(t *testing.T) {
	netnstest.RequireRoot(t, "creating a veth pair")
	ns := netnstest.New(t, "trxf")
	for _, args := range [][]string{
		{"link", "add", "xfa0", "type", "veth", "peer", "name", "xfb0"},
		{"link", "set", "xfa0", "up"},
		{"link", "set", "xfb0", "up"}, // veth reports its XDP features once both ends are up
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var feats DriverFeatures
	var qerr, missing error
	if err := netnstest.In(ns, func() error {
		ifi, err := net.InterfaceByName("xfa0")
		if err != nil {
			return err
		}
		feats, qerr = QueryDriverFeatures(ifi.Index)
		_, missing = QueryDriverFeatures(1 << 30)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if errors.Is(qerr, ErrNoNetdevFamily) {
		t.Skipf("skipping: %v", qerr)
	}
	if qerr != nil {
		t.Fatal(qerr)
	}
	t.Logf("veth XDP features: %#x", uint64(feats))
	if feats&FeatureBasic == 0 || feats&FeatureRedirect == 0 {
		t.Fatalf("veth reports %#x, want basic and redirect", uint64(feats))
	}
	if missing == nil {
		t.Fatal("no error for a missing interface")
	}
}

// FuzzParseAttrs: the netlink attribute parser never panics and returns
// only values that lie inside its input.
func FuzzParseAttrs(f *testing.F) {
	f.Add(append(nlattr(1, []byte{3, 0, 0, 0}), nlattr(3, []byte{0x23, 0, 0, 0, 0, 0, 0, 0})...))
	f.Add([]byte{4, 0})
	f.Add([]byte{0xff, 0xff, 1, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		for _, v := range parseAttrs(b) {
			total += len(v)
		}
		if total > len(b) {
			t.Fatalf("%d value bytes from %d input bytes", total, len(b))
		}
	})
}
