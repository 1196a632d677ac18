//go:build eval

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/offload/flood"
)

func decodeFloodSummary(t *testing.T, out string) floodSummary {
	t.Helper()
	var s floodSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	return s
}

func TestFloodRefusals(t *testing.T) {
	if private, _ := flood.InPrivateNetns(); private {
		t.Skip("skipping: this test already runs in a private network namespace")
	}
	code, out, errOut := runCLI("flood", "--target", "192.0.2.1:443", "--count", "10", "--duration", "1s")
	if code != exitFail || out != "" || !strings.Contains(errOut, "docs/design.md") {
		t.Errorf("non-loopback target: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI("flood", "--target", "127.0.0.1:443", "--count", "10", "--duration", "1s", "--iface", "lo", "--spoof")
	if code != exitFail || !strings.Contains(errOut, "namespace") {
		t.Errorf("--spoof outside a namespace: exit %d, stderr %q", code, errOut)
	}
}

func TestFloodUsage(t *testing.T) {
	base := []string{"flood", "--target", "127.0.0.1:4433", "--count", "10", "--duration", "1s"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flood", "--count", "10", "--duration", "1s"}, "--target is required"},
		{[]string{"flood", "--target", "127.0.0.1:4433", "--duration", "1s"}, "unbounded"},
		{[]string{"flood", "--target", "127.0.0.1:4433", "--count", "10"}, "unbounded"},
		{[]string{"flood", "--target", "127.0.0.1:4433", "--count", "0", "--duration", "1s"}, "unbounded"},
		{[]string{"flood", "--target", "127.0.0.1:4433", "--count", "5", "--duration", "0s"}, "unbounded"},
		{[]string{"flood", "--target", "127.0.0.1", "--count", "5", "--duration", "1s"}, "IP:PORT"},
		{append(base, "--version", "3"), "--version"},
		{append(base, "--dcid-len", "7"), "--dcid-len"},
		{append(base, "--scid-len", "21"), "--scid-len"},
		{append(base, "--pool", "0"), "--pool"},
		{append(base, "--pool", "5", "--reprotect"), "exclude"},
		{append(base, "--rate", "-1"), "rate"},
		{append(base, "--batch", "0"), "--batch"},
		{append(base, "--spoof"), "--spoof and --iface"},
		{append(base, "--iface", "lo"), "--spoof and --iface"},
		{append(base, "--spoof=10.0.0.0/8", "--iface", "lo"), "198.18.0.0/15"},
		{append(base, "--spoof=198.18.0.0/14", "--iface", "lo"), "198.18.0.0/15"},
		{append(base, "--dst-mac", "02:00:00:00:00:01"), "--dst-mac"},
		{[]string{"flood", "--target", "[::1]:4433", "--count", "5", "--duration", "1s", "--iface", "lo", "--spoof"}, "IPv4"},
		{append(base, "extra"), "unexpected argument"},
		{append(base, "--live"), "--live needs --iface and --spoof"},
		{append(base, "--live", "--iface", "lo", "--spoof", "--reprotect"), "--reprotect"},
		{append(base, "--live", "--iface", "lo", "--spoof", "--dcid-len", "9"), "8-byte"},
		{append(base, "--live", "--iface", "lo", "--spoof", "--batch", "300"), "1 to 256"},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr lacks %q:\n%s", c.args[1:], code, out, c.want, errOut)
		}
	}
	if code, _, errOut := runCLI("flood", "-h"); code != exitOK || !strings.Contains(errOut, "198.18.0.0/15") {
		t.Errorf("-h: exit %d, %q", code, errOut)
	}
}
