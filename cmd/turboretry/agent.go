package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	appmetrics "github.com/turboretry/turboretry/app/metrics"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/split"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

func init() {
	register(&command{
		name:    "agent",
		summary: "run the split-mode (DPU) Retry agent between a wire port and a host port",
		run:     runAgent,
	})
}

const agentSynopsis = "turboretry agent --wire IF --host IF --port PORT --secret FILE --control ADDR:PORT\n" +
	"         [--cid-host-id HEX] [--cid-config-id N] [--cid-nonce-len N] [--fastpath mac|bloom] [--workers N]\n" +
	"         [--stale-after 1s] [--rotate 30s] [--idle-timeout 30s] [--metrics ADDR]\n\n" +
	"Runs the Retry agent as a process of its own between the wire port (--wire, p0 on a\n" +
	"BlueField-3) and the host port (--host, pf0hpf): an XDP fast path on the wire port passes\n" +
	"packets of admitted connections on towards the host, the agent answers token-less\n" +
	"Initials with a Retry and sends validated ones out of the host port unchanged. The host\n" +
	"announces its connection IDs to --control (UDP, authenticated with a key derived from\n" +
	"the shared --secret). The XDP program is not pinned: when this process ends, however it\n" +
	"ends, the wire port passes everything and the host validates by itself (fail-open).\n" +
	"--rotate (the fast-path aging window) must not be below the host's --idle-timeout.\n" +
	"--cid-* and --fastpath must be the host's (turboretry serve): with --fastpath mac (the\n" +
	"default) the host's connection IDs pass on their MAC and only the rest is announced;\n" +
	"--workers is the host's worker count, over which the agent's Retry SCIDs are spread.\n" +
	"SIGHUP reloads the secret; SIGUSR1 pauses the agent, SIGUSR2 resumes it; SIGINT or\n" +
	"SIGTERM stops it. Linux, root (docs/split.md)."

// agentFlags are the agent's parsed command line.
type agentFlags struct {
	cfg         split.Config
	layout      quiclb.Config // the host's ID layout, MAC key from the secret
	secret      string
	metricsAddr string
}

// parseAgentFlags parses and checks args; on failure it returns the exit
// status (usage printed).
func parseAgentFlags(args []string, stderr io.Writer) (agentFlags, int, bool) {
	var f agentFlags
	flags := newFlagSet("agent", agentSynopsis, stderr)
	wire := flags.String("wire", "", "the wire port `IF` clients arrive on (p0); the XDP program attaches here")
	host := flags.String("host", "", "the host port `IF` (pf0hpf) validated Initials leave through")
	port := flags.Uint("port", 443, "the server's UDP `PORT`")
	secret := flags.String("secret", "", "token root secret `FILE` shared with the host (see turboretry keygen)")
	control := flags.String("control", "", "UDP `ADDR:PORT` to receive the host's connection ID announcements on")
	cids := addCIDFlags(flags)
	workers := flags.Int("workers", 1, "the host's `N` workers (serve --workers) the Retry SCIDs spread over")
	staleAfter := flags.Duration("stale-after", time.Second, "fail open when the agent's heartbeat is older than `D`")
	rotate := flags.Duration("rotate", split.DefaultRotateEvery, "fast-path aging window T_W (`D`); at least --idle-timeout")
	idle := flags.Duration("idle-timeout", split.DefaultIdleTimeout, "the host's QUIC idle timeout (`D`)")
	metricsAddr := flags.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics")
	prefixRate := prefixRateFlags(flags, "", true)
	pos, err := parseArgs(flags, args)
	if err != nil {
		return f, flagExit(err), false
	}
	fail := func(format string, a ...any) (agentFlags, int, bool) {
		return f, usageError(flags, format, a...), false
	}
	switch {
	case len(pos) > 0:
		return fail("unexpected argument %q", pos[0])
	case *wire == "" || *host == "":
		return fail("--wire and --host are required")
	case *wire == *host:
		return fail("--wire and --host must be different interfaces")
	case *secret == "":
		return fail("--secret is required: the agent and the host must share the root secret")
	case *control == "":
		return fail("--control is required: the address the host announces its connection IDs to")
	case *port == 0 || *port > 65535:
		return fail("--port %d: want 1..65535", *port)
	case *workers < 1 || *workers > quiclb.MaxWorkers:
		return fail("--workers %d: want 1..%d", *workers, quiclb.MaxWorkers)
	case *staleAfter <= 0 || *rotate <= 0 || *idle <= 0:
		return fail("--stale-after, --rotate and --idle-timeout must be positive")
	}
	if err := fastpath.CheckWindow(*rotate, *idle); err != nil {
		return fail("--rotate %v, --idle-timeout %v: %v", *rotate, *idle, err)
	}
	ctl, err := netip.ParseAddrPort(*control)
	if err != nil || ctl.Port() == 0 {
		return fail("--control %q: want IP:PORT with a nonzero port", *control)
	}
	layout, cacheOnly, err := cids.layout()
	if err != nil {
		return fail("%v", err)
	}
	pr, err := prefixRate(0, 0)
	if err != nil {
		return fail("%v", err)
	}
	f.cfg = split.Config{
		PrefixRate:  pr,
		WireIface:   *wire,
		HostIface:   *host,
		Port:        uint16(*port),
		IDWorkers:   *workers,
		CacheOnly:   cacheOnly,
		Control:     ctl,
		StaleAfter:  *staleAfter,
		RotateEvery: *rotate,
		IdleTimeout: *idle,
	}
	f.layout, f.secret, f.metricsAddr = layout, *secret, *metricsAddr
	return f, exitOK, true
}

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseAgentFlags(args, stderr)
	if !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	kr, err := token.LoadKeyRing(f.secret, token.DefaultRotation)
	if err != nil {
		fmt.Fprintln(stderr, "agent: reading the secret:", err)
		return exitFail
	}
	f.cfg.KeyRing, f.cfg.Logger = kr, log
	// The MAC key derives from the secret read at start, as on the host;
	// a reloaded secret takes effect for IDs at the next restart.
	key := quiclb.KeyFromRing(kr)
	f.layout.MACKey = &key
	if f.cfg.IDs, err = quiclb.NewCodec(f.layout); err != nil {
		fmt.Fprintln(stderr, "agent:", err) // checked in parseAgentFlags already
		return exitFail
	}

	// The metrics socket first: a taken address fails before anything
	// filters.
	var ml net.Listener
	if f.metricsAddr != "" {
		if ml, err = net.Listen("tcp", f.metricsAddr); err != nil {
			fmt.Fprintln(stderr, "agent: metrics:", err)
			return exitFail
		}
		defer ml.Close()
	}
	a, err := split.Start(f.cfg)
	if err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		if errors.Is(err, split.ErrConfig) {
			return exitUsage
		}
		return exitFail
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Warn("agent: closing", "err", err)
		}
	}()
	if ml != nil {
		srv := &http.Server{Handler: agentMetricsHandler(a, log), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ml) }()
		defer srv.Close()
	}

	// Registered before the summary line, so whoever waits for it may
	// signal without killing the process.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGHUP}, offloadSignals...)...)
	defer signal.Stop(sigs)

	metricsURL := ""
	if ml != nil {
		metricsURL = "http://" + ml.Addr().String() + "/metrics"
	}
	log.Info("agent: running", "wire", f.cfg.WireIface, "host", f.cfg.HostIface, "port", f.cfg.Port,
		"control", f.cfg.Control.String(), "cid_len", f.cfg.IDs.Len(), "fastpath_mac", !f.cfg.CacheOnly, "stale_after", f.cfg.StaleAfter,
		"rotate", f.cfg.RotateEvery, "idle_timeout", f.cfg.IdleTimeout, "metrics", metricsURL, "pid", os.Getpid())
	for {
		select {
		case <-ctx.Done():
			log.Info("agent: stopping")
			return exitOK
		case sig := <-sigs:
			switch {
			case sig == pauseSignal:
				a.Pause()
				log.Info("SIGUSR1: agent paused (fail-open after --stale-after)")
			case sig == resumeSignal:
				a.Resume()
				log.Info("SIGUSR2: agent resumed")
			default:
				reloadAgentSecret(a, f.secret, log)
			}
		}
	}
}

// reloadAgentSecret rereads the secret file and switches the agent to it;
// a bad file keeps the old secret.
func reloadAgentSecret(a *split.Agent, path string, log *slog.Logger) {
	kr, err := token.LoadKeyRing(path, token.DefaultRotation)
	if err == nil {
		err = a.SetKeyRing(kr)
	}
	if err != nil {
		log.Error("SIGHUP: secret not reloaded; keeping the old one", "file", path, "err", err)
		return
	}
	log.Info("SIGHUP: secret reloaded", "file", path)
}

// agentMetricsHandler serves the agent's metrics at /metrics: its
// counters (app/metrics.NewSplitAgentCollector) and the go_* and
// process_* collectors.
func agentMetricsHandler(a *split.Agent, log *slog.Logger) http.Handler {
	reg := appmetrics.NewRegistry()
	reg.MustRegister(appmetrics.NewSplitAgentCollector(a.Stats))
	mux := http.NewServeMux()
	mux.Handle("/metrics", appmetrics.Handler(reg, log))
	return mux
}
