package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCLI runs the CLI in-process.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommandList(t *testing.T) {
	for _, args := range [][]string{nil, {"help"}, {"--help"}} {
		code, out, _ := runCLI(args...)
		want := exitOK
		if len(args) == 0 {
			want = exitUsage
		}
		if code != want {
			t.Errorf("%v: exit %d, want %d", args, code, want)
		}
		for _, name := range []string{"keygen", "token"} {
			if !strings.Contains(out, name) {
				t.Errorf("%v: list lacks %q:\n%s", args, name, out)
			}
		}
	}
	code, _, errOut := runCLI("frobnicate")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "keygen") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := runCLI("help", "keygen")
	if code != exitOK || !strings.Contains(out, "-force") {
		t.Errorf("help keygen: exit %d, %q", code, out)
	}
	if code, _, _ := runCLI("help", "nope"); code != exitUsage {
		t.Errorf("help nope: exit %d", code)
	}
}
