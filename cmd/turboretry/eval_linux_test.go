//go:build eval

package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/app/eval"
	"github.com/turboretry/turboretry/internal/netnstest"
)

// requireLiveFrames skips on a kernel older than 5.18 (no BPF_PROG_RUN
// live frames).
func requireLiveFrames(t *testing.T) {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Skipf("skipping: uname: %v", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil || major < 5 || major == 5 && minor < 18 {
		t.Skipf("skipping: kernel %s has no BPF_PROG_RUN live frames (Linux >= 5.18)", unix.ByteSliceToString(u.Release[:]))
	}
}

// TestEvalQuick runs `turboretry eval --quick` with every variant (this
// test binary is the quic-go server of (a) and, for the children it
// starts, the turboretry command) and checks the CSV files and plots:
// present, parseable, every variant in figure 9, the x values of each
// series ascending. It asserts no figure: the machine's load decides
// those. About a minute and a half on the 2-core development machine.
func TestEvalQuick(t *testing.T) {
	netnstest.RequireRoot(t, "turboretry eval (network namespaces, XDP, BPF_PROG_RUN)")
	netnstest.RequireAFXDP(t)
	for _, tool := range []string{"taskset", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: needs %s", tool)
		}
	}
	requireLiveFrames(t)
	if testing.Short() {
		t.Skip("skipping in -short: the quick evaluation takes a minute or two")
	}
	t.Setenv(cliRoleEnv, "1") // the children: serve, agent
	dir := t.TempDir()
	code, out, errOut := runCLI("eval", "--quick", "--out", dir, "--quicgo-server", os.Args[0])
	if code != exitOK {
		t.Fatalf("eval --quick: exit %d\n%s\n%s", code, out, tail(errOut, 4000))
	}
	all := []eval.Variant{eval.QuicGo, eval.HostAlways, eval.HostAuto, eval.XDP, eval.Split}
	if err := eval.CheckOutputs(dir, all, nil); err != nil {
		t.Fatal(err)
	}
	// Every figure's plot and its data are there, and figure 9's CSV
	// names each variant once.
	for _, p := range eval.Plots {
		for _, ext := range []string{".png", ".svg"} {
			if fi, err := os.Stat(filepath.Join(dir, p+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("plot %s%s: %v", p, ext, err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, eval.FileMaxRate))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(all) {
		t.Fatalf("%s has %d rows, want a header and one per variant:\n%s", eval.FileMaxRate, len(rows), b)
	}
	if !strings.Contains(out, "(c)/(b)") {
		t.Errorf("the summary lacks the (c)/(b) ratio:\n%s", out)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func TestEvalUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--variants", "z-nothing"}, "unknown variant"},
		{[]string{"eval", "--skip", "10"}, "--skip"},
		{[]string{"eval", "--runs", "-1"}, "negative"},
		{[]string{"eval", "--server-cpus", "1-0"}, "--server-cpus"},
		{[]string{"eval", "--client-cpus", "x"}, "--client-cpus"},
		{[]string{"eval", "extra"}, "unexpected argument"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr lacks %q:\n%s", c.args[1:], code, c.want, errOut)
		}
	}
	if got, err := parseCPUList("0,2-3"); err != nil || len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Errorf("parseCPUList(0,2-3) = %v, %v", got, err)
	}
	if code, _, errOut := runCLI("eval", "--replot", "--out", t.TempDir()); code != exitFail || !strings.Contains(errOut, "results.json") {
		t.Errorf("--replot without results: exit %d, %q", code, errOut)
	}
}
