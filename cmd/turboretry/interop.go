//go:build eval

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/turboretry/turboretry/app/interopendpoint"
)

func init() {
	register(&command{
		name:    "interop",
		summary: "endpoint for the QUIC interop runner (ROLE, TESTCASE, REQUESTS from the environment)",
		run:     runInterop,
	})
}

// exitUnsupported is the interop runner's "test case not supported".
const exitUnsupported = 127

const interopSynopsis = "turboretry interop [server|client] [--www DIR] [--downloads DIR] [--certs DIR] [--addr ADDR]\n\n" +
	"The endpoint of the QUIC interop runner (quic-interop-runner's contract): ROLE (or the\n" +
	"first argument), TESTCASE, REQUESTS, SSLKEYLOGFILE and QLOGDIR come from the environment.\n" +
	"The server serves --www (/www) on UDP --addr ([::]:443) with --certs/cert.pem and\n" +
	"priv.key; the client fetches every URL of REQUESTS into --downloads (/downloads),\n" +
	"trusting --certs/ca.pem, and exits 0 only when all downloads completed. hq-interop\n" +
	"(HTTP/0.9) for every test case but http3 (HTTP/3). A TESTCASE it does not implement\n" +
	"exits 127. The server runs until SIGTERM or SIGINT."

func runInterop(ctx context.Context, args []string, _, stderr io.Writer) int {
	flags := newFlagSet("interop", interopSynopsis, stderr)
	www := flags.String("www", interopendpoint.DefaultWWW, "serve the files under `DIR` (server)")
	downloads := flags.String("downloads", interopendpoint.DefaultDownloads, "store the downloads in `DIR` (client)")
	certs := flags.String("certs", "/certs", "`DIR` with cert.pem and priv.key (server) and ca.pem (client)")
	addr := flags.String("addr", interopendpoint.DefaultAddr, "listen on UDP `ADDR` (server)")
	pos, err := parseArgs(flags, args)
	if err != nil {
		return flagExit(err)
	}
	cfg := interopendpoint.FromEnv(os.Getenv)
	switch len(pos) {
	case 0:
	case 1:
		cfg.Role = interopendpoint.Role(pos[0])
	default:
		return usageError(flags, "unexpected argument %q", pos[1])
	}
	cfg.WWW, cfg.Downloads, cfg.Addr = *www, *downloads, *addr
	cfg.CertFile = strings.TrimSuffix(*certs, "/") + "/cert.pem"
	cfg.KeyFile = strings.TrimSuffix(*certs, "/") + "/priv.key"
	cfg.CAFile = strings.TrimSuffix(*certs, "/") + "/ca.pem"
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	err = interopendpoint.Run(ctx, cfg)
	switch {
	case errors.Is(err, interopendpoint.ErrUnsupported):
		fmt.Fprintln(stderr, err)
		return exitUnsupported
	case err != nil:
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	return exitOK
}
