//go:build !eval

package main

import (
	"context"
	"fmt"
	"io"
)

// The default build is what an operator runs: serve and its helpers. The
// evaluation (its plotting library nearly doubles the binary), the Initial
// flood generator and the interop runner's endpoint are tools for measuring
// and testing the stack, so they build only with -tags eval; here each name
// answers how to get it.
func init() {
	for _, c := range []struct{ name, what string }{
		{"eval", "the paper's evaluation"},
		{"flood", "the QUIC Initial flood generator"},
		{"interop", "the QUIC interop runner's endpoint"},
	} {
		register(&command{
			name:    c.name,
			summary: c.what + " (not in this build: build with -tags eval, or make eval)",
			run:     evalOnly(c.name),
		})
	}
}

// evalOnly returns the run function of a subcommand that the default build
// leaves out: it says how to build a binary that has it.
func evalOnly(name string) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(_ context.Context, _ []string, _, stderr io.Writer) int {
		fmt.Fprintf(stderr, "turboretry %s: this binary was built without it; "+
			"build it with `go build -tags eval ./cmd/turboretry` or run `make eval`\n", name)
		return exitUsage
	}
}
