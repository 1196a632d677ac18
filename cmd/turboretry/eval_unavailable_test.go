//go:build !eval

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The subcommands that only the eval build has answer, in the default build,
// with how to build them, and fail without running anything.
func TestEvalUnavailableSaysHowToBuildIt(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--quick"},
		{"flood", "--target", "127.0.0.1:4433", "--count", "1", "--duration", "1s"},
		{"interop", "server"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code != exitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "-tags eval") {
			t.Errorf("%s without the tag: code %d, stdout %q, stderr %q", args[0], code, out.String(), errOut.String())
		}
	}
}
