//go:build eval

package main

import (
	"strings"
	"testing"
)

// TestInteropExitCodes: the runner's contract wants 127 for a TESTCASE
// the endpoint does not implement, unknown ones included, and anything
// else for a failure.
func TestInteropExitCodes(t *testing.T) {
	t.Setenv("REQUESTS", "")
	t.Setenv("SSLKEYLOGFILE", "")
	t.Setenv("QLOGDIR", "")
	for _, tc := range []struct {
		role, testcase string
		args           []string
		want           int
		stderr         string
	}{
		{"server", "unknown-deadbeef", nil, exitUnsupported, "unsupported"},
		{"client", "unknown-deadbeef", nil, exitUnsupported, "unsupported"},
		{"", "handshake", []string{"sim"}, exitUnsupported, "unknown role"},
		// Supported, but REQUESTS is empty: a failure, not "unsupported".
		{"client", "handshake", nil, exitFail, "no requests"},
		// The role as an argument.
		{"", "unknown-deadbeef", []string{"client"}, exitUnsupported, "unsupported"},
	} {
		t.Setenv("ROLE", tc.role)
		t.Setenv("TESTCASE", tc.testcase)
		code, _, stderr := runCLI(append([]string{"interop"}, tc.args...)...)
		if code != tc.want || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("ROLE=%q TESTCASE=%q %v: exit %d (%q), want %d with %q", tc.role, tc.testcase, tc.args, code, stderr, tc.want, tc.stderr)
		}
	}
	if code, _, _ := runCLI("interop", "client", "server"); code != exitUsage {
		t.Errorf("two roles: exit %d, want %d", code, exitUsage)
	}
}
