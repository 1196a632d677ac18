package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// cliRoleEnv makes the test binary act as the turboretry command (its
// arguments a command line), so that tests can start it as a child where
// the command would run: `turboretry eval` starts its own executable as
// the server and the agent.
const cliRoleEnv = "TURBORETRY_TEST_AS_CLI"

// evalRole, set by the eval build (eval_quicgo_test.go), runs the test
// binary as the evaluation's quic-go server and reports whether it did.
var evalRole func() (exitCode int, ran bool)

// TestMain also turns the test binary into the quic-go server of the
// evaluation's variant (a) when built with -tags eval: quic-go may only be
// used from tests, so `make eval` builds this binary (go test -c) as the
// evaluation's --quicgo-server.
func TestMain(m *testing.M) {
	if evalRole != nil {
		if code, ran := evalRole(); ran {
			os.Exit(code)
		}
	}
	if os.Getenv(cliRoleEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
