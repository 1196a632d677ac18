package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/offload/prefixrate"
)

// TestAgentUsageErrors: every bad command line is refused with exit 2 and
// a message naming the problem, before anything needs privileges.
func TestAgentUsageErrors(t *testing.T) {
	base := []string{"--wire", "p0", "--host", "pf0hpf", "--secret", "s.key", "--control", "198.18.0.254:4434"}
	with := func(extra ...string) []string { return append(append([]string{"agent"}, base...), extra...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "--wire and --host are required"},
		{[]string{"agent", "--wire", "p0", "--host", "p0", "--secret", "s", "--control", "198.18.0.1:1"}, "different interfaces"},
		{[]string{"agent", "--wire", "p0", "--host", "pf0hpf", "--control", "198.18.0.1:1"}, "--secret is required"},
		{[]string{"agent", "--wire", "p0", "--host", "pf0hpf", "--secret", "s"}, "--control is required"},
		{with("--control", "nonsense"), `--control "nonsense"`},
		{with("--control", "198.18.0.1:0"), "nonzero port"},
		{with("--port", "0"), "--port 0"},
		{with("--port", "70000"), "--port 70000"},
		{with("--cid-nonce-len", "30"), "--cid-*"},
		{with("--cid-host-id", "zz"), "--cid-host-id"},
		{with("--cid-config-id", "7"), "--cid-config-id 7"},
		{with("--fastpath", "cuckoo"), `--fastpath "cuckoo"`},
		{with("--workers", "0"), "--workers 0"},
		{with("--rotate", "10s"), "--rotate 10s, --idle-timeout 30s: the fast-path aging window T_W (10s) is shorter than the QUIC idle timeout (30s)"},
		{with("--idle-timeout", "1m"), "--rotate 30s, --idle-timeout 1m0s: the fast-path aging window T_W (30s) is shorter than the QUIC idle timeout (1m0s)"},
		{with("--stale-after", "0s"), "must be positive"},
		{with("--prefix-action", "tarpit"), `--prefix-action: prefixrate: unknown action "tarpit"`},
		{with("--prefix-rate", "-1"), "--prefix-rate: prefixrate: Rate -1"},
		{with("--prefix-rate", "5", "--prefix-len4", "40"), "prefix lengths /40"},
		{with("extra"), `unexpected argument "extra"`},
		{with("--frobnicate"), "flag provided but not defined"},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args[1:], code, errOut, exitUsage, tc.want)
		}
	}
}

// TestAgentPrefixRateFlags: the fast path's per-prefix limit reaches the
// split agent's Config.
func TestAgentPrefixRateFlags(t *testing.T) {
	f, code, ok := parseAgentFlags([]string{"--wire", "p0", "--host", "pf0hpf", "--secret", "s.key", "--control", "198.18.0.254:4434",
		"--prefix-rate", "20", "--prefix-burst", "8", "--prefix-action", "drop", "--prefix-len4", "22", "--prefix-len6", "48", "--max-prefixes", "1000"}, io.Discard)
	if !ok {
		t.Fatalf("exit %d", code)
	}
	want := prefixrate.Config{Rate: 20, Burst: 8, PrefixLen4: 22, PrefixLen6: 48, MaxPrefixes: 1000, Action: prefixrate.Drop}
	if f.cfg.PrefixRate != want {
		t.Fatalf("PrefixRate %+v, want %+v", f.cfg.PrefixRate, want)
	}
}

// TestAgentMissingSecret: a secret file that is not there fails (exit 1)
// with a message naming it, before the agent touches any interface.
func TestAgentMissingSecret(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.key")
	code, _, errOut := runCLI("agent", "--wire", "p0", "--host", "pf0hpf", "--secret", missing, "--control", "198.18.0.254:4434")
	if code != exitFail || !strings.Contains(errOut, "agent: reading the secret") || !strings.Contains(errOut, "none.key") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestAgentListedAndHelp: the command list names the agent, and its help
// shows the flags.
func TestAgentListedAndHelp(t *testing.T) {
	if _, out, _ := runCLI("help"); !strings.Contains(out, "agent") {
		t.Errorf("command list lacks agent:\n%s", out)
	}
	code, out, _ := runCLI("help", "agent")
	for _, want := range []string{"-wire", "-host", "-control", "-idle-timeout", "-rotate", "fail-open"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("help agent: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}
