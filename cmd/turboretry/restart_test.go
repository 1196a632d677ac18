package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestartUsageErrors(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "serve.pid")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "--pid-file is required"},
		{[]string{"--pid-file", pidFile, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"--pid-file", pidFile, "--", "agent"}, exitUsage, "starts with serve"},
		{[]string{"--pid-file", pidFile, "--", "serve", "--addr", ":443"}, exitUsage, "needs --pid-file"},
		{[]string{"--pid-file", pidFile, "--timeout", "0s"}, exitUsage, "--timeout must be positive"},
		{[]string{"--pid-file", pidFile, "--state-dir", dir}, exitFail, "no such file"},
	} {
		code, _, errOut := runCLI(append([]string{"restart"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("restart %v: exit %d, %q; want %d with %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	// A pid file naming a process without a control socket.
	if err := os.WriteFile(pidFile, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("restart", "--pid-file", pidFile, "--state-dir", dir); code != exitFail || !strings.Contains(errOut, "no restart control socket") {
		t.Errorf("restart of a process without a control socket: exit %d, %q", code, errOut)
	}
	if err := os.WriteFile(pidFile, []byte("soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("restart", "--pid-file", pidFile, "--state-dir", dir); code != exitFail || !strings.Contains(errOut, "not a process ID") {
		t.Errorf("restart with a bad pid file: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI("serve", "--pid-file", pidFile, "--drain-timeout", "0s", "--state-dir", dir); code != exitUsage || !strings.Contains(errOut, "--drain-timeout must be positive") {
		t.Errorf("serve --drain-timeout 0s: exit %d, %q", code, errOut)
	}
}
