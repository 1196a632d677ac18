//go:build !eval

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestEvalUnavailableSaysHowToBuildIt(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"eval", "--quick"}, &out, &errOut)
	if code != exitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "-tags eval") {
		t.Fatalf("eval without the tag: code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
