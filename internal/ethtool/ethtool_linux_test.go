//go:build linux

package ethtool

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestAgreesWithEthtool compares the features of lo with what the ethtool
// binary prints (`ethtool -k lo`), where it is installed.
func TestAgreesWithEthtool(t *testing.T) {
	out, err := exec.Command("ethtool", "-k", "lo").Output()
	if err != nil {
		t.Skipf("skipping: ethtool -k lo: %v", err)
	}
	f, err := GetFeatures("lo")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, line := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ": ")
		got, known := f[name]
		if !ok || !known {
			continue // a heading or a legacy group name
		}
		want := Feature{Active: strings.HasPrefix(rest, "on"), Fixed: strings.Contains(rest, "[fixed]")}
		if got != want {
			t.Errorf("%s: %+v, ethtool says %q", name, got, rest)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d features compared", checked)
	}
}

// TestLoopback reads what lo reports; every Linux has it, and no privilege
// is needed to read.
func TestLoopback(t *testing.T) {
	f, err := GetFeatures("lo")
	if err != nil {
		t.Fatal(err)
	}
	// The loopback's checksum offload is fixed on, and every kernel since
	// 4.18 names the UDP segmentation feature.
	if lc, ok := f["tx-checksum-ip-generic"]; !ok || !lc.Active {
		t.Errorf("lo tx-checksum-ip-generic: %+v, %v", lc, ok)
	}
	if _, ok := f["tx-udp-segmentation"]; !ok {
		t.Errorf("no tx-udp-segmentation among %d features", len(f))
	}
	if _, err := GetChannels("lo"); err != nil && !errors.Is(err, ErrNotSupported) {
		t.Errorf("GetChannels(lo): %v", err)
	}
	if _, err := GetFeatures("no-such-if0"); err == nil {
		t.Error("GetFeatures of a missing interface succeeded")
	}
	if _, err := Driver("a-name-longer-than-ifnamsiz"); err == nil {
		t.Error("a 27-byte interface name accepted")
	}
}
