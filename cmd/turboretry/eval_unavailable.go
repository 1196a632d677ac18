//go:build !eval

package main

import (
	"context"
	"fmt"
	"io"
)

// The evaluation pulls in a plotting library that nearly doubles the binary,
// so the default build leaves it out and says how to get it.
func init() {
	register(&command{
		name:    "eval",
		summary: "the paper's evaluation (not in this build: build with -tags eval, or make eval)",
		run:     runEvalUnavailable,
	})
}

func runEvalUnavailable(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "turboretry eval: this binary was built without the evaluation; "+
		"build it with `go build -tags eval ./cmd/turboretry` or run `make eval`")
	return exitUsage
}
