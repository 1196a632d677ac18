package main

import (
	"strings"
	"testing"
)

// TestServeOffloadFlags: --offload and --iface are checked before anything
// starts, with messages naming the flags.
func TestServeOffloadFlags(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--offload", "dpu"}, `invalid offload mode "dpu"`},
		{[]string{"--offload", "xdp"}, "--offload xdp and --iface go together"},
		{[]string{"--iface", "eth0"}, "--offload xdp and --iface go together"},
		{[]string{"--offload", "split"}, "--offload split and --agent-control go together"},
		{[]string{"--agent-control", "127.0.0.1:9"}, "--offload split and --agent-control go together"},
		{[]string{"--offload", "split", "--agent-control", "localhost:9"}, "--agent-control:"},
		{[]string{"--offload-prefix-rate", "50"}, "--offload-prefix-rate needs --offload xdp"},
		{[]string{"--offload", "xdp", "--iface", "eth0", "--offload-prefix-action", "tarpit"}, "--offload-prefix-action"},
		{[]string{"--offload", "xdp", "--iface", "eth0", "--offload-prefix-rate", "NaN"}, "--offload-prefix-rate"},
	} {
		args := append([]string{"serve", "--state-dir", state}, tc.args...)
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	code, out, _ := runCLI("help", "serve")
	if code != exitOK || !strings.Contains(out, "-offload") || !strings.Contains(out, "-iface") || !strings.Contains(out, "SIGUSR1") ||
		!strings.Contains(out, "-agent-control") || !strings.Contains(out, "-offload-prefix-rate") {
		t.Errorf("help serve: exit %d, %q", code, out)
	}
}

// TestServeOffloadNoInterface: an interface that does not exist (or, run
// without root, the missing privilege) stops serve with an error naming
// the offload, rather than serving unprotected.
func TestServeOffloadNoInterface(t *testing.T) {
	code, _, errOut := runCLI("serve", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--offload", "xdp", "--iface", "nosuchif0")
	if code != exitFail || !strings.Contains(errOut, "offload xdp on nosuchif0") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
