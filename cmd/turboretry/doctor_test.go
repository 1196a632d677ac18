package main

import (
	"strings"
	"testing"
)

// TestDoctorRuns runs the real checks on this machine: every line has a
// status, the summary comes last, and the exit status is 0 (--strict is
// what makes advice fail).
func TestDoctorRuns(t *testing.T) {
	code, out, errOut := runCLI("doctor", "--iface", "lo", "--workers", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 8 || !strings.HasPrefix(lines[len(lines)-1], "summary: ") {
		t.Fatalf("output:\n%s", out)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "OK ") && !strings.HasPrefix(l, "FIX ") && !strings.HasPrefix(l, "INFO ") {
			t.Errorf("line without a status: %q", l)
		}
		if strings.HasPrefix(l, "FIX ") && !strings.Contains(l, " -> ") {
			t.Errorf("FIX without a fix: %q", l)
		}
	}
	t.Logf("\n%s", out)
	want := exitOK
	if strings.Contains(out, "\nFIX ") || strings.HasPrefix(out, "FIX ") {
		want = exitFail
	}
	if code, _, _ := runCLI("doctor", "--iface", "lo", "--workers", "2", "--strict"); code != want {
		t.Errorf("--strict: exit %d, want %d", code, want)
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"doctor", "extra"}, {"doctor", "--workers", "-1"}} {
		if code, _, _ := runCLI(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errOut := runCLI("doctor", "--iface", "no-such-if0"); code != exitFail || !strings.Contains(errOut, "no-such-if0") {
		t.Errorf("missing interface: exit %d, %q", code, errOut)
	}
}
