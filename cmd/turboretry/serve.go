package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/turboretry/turboretry/app/doctor"
	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/app/proxy"
	"github.com/turboretry/turboretry/internal/handover"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/reuseport"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "serve files, or proxy to an application, over HTTP/3 and HTTPS (HTTP/1.1, HTTP/2)",
		run:     runServe,
	})
}

const serveSynopsis = "turboretry serve [--addr :443] [--root DIR] [--cert FILE --key FILE] [--retry auto|always|never]\n" +
	"         [--dotfiles] [--list-dirs] [--secret FILE] [--metrics ADDR] [--state-dir DIR] [--qlog-dir DIR]\n" +
	"         [--workers N] [--gc-percent N] [--cid-host-id HEX] [--cid-config-id N] [--cid-nonce-len N] [--fastpath mac|bloom]\n" +
	"         [--offload none | xdp --iface IF | split --agent-control ADDR] [limits: --max-conns N ...]\n" +
	"         [--upstream URL ... | --route /PREFIX=URL ...] [--upstream-ca FILE | --upstream-insecure]\n" +
	"         [--upstream-connect-timeout D] [--upstream-timeout D] [--max-body-bytes SIZE] [--trust-forwarded CIDR ...]\n" +
	"         [--pid-file FILE [--drain-timeout D]]\n\n" +
	"Serves DIR (default: a built-in demo site) over HTTP/3 (UDP) and over HTTPS with\n" +
	"HTTP/1.1 and HTTP/2 (TCP) on the same port, advertising HTTP/3 with Alt-Svc. It answers\n" +
	"GET and HEAD only; names starting with a dot (except /.well-known) are 404 unless\n" +
	"--dotfiles, and so is a directory without index.html unless --list-dirs. --retry\n" +
	"decides when QUIC clients must prove their address with a Retry first: always, never,\n" +
	"or auto (only while many handshakes are in flight, as under a flood). Tokens use the\n" +
	"root secret an offload agent shares. Without --cert/--key it uses a\n" +
	"self-signed certificate kept in the state directory and prints the SPKI hash that\n" +
	"Chromium's --ignore-certificate-errors-spki-list needs; without --secret it creates a\n" +
	"root secret there (mode 0600). SIGHUP reloads the certificate and the secret;\n" +
	"SIGINT or SIGTERM shuts down gracefully. --offload xdp --iface IF runs the Retry agent\n" +
	"in this process behind an XDP fast path on IF (Linux, root; docs/offload.md); SIGUSR1\n" +
	"pauses the agent (fail-open: the host validates) and SIGUSR2 resumes it. --offload split\n" +
	"--agent-control ADDR works with a separate `turboretry agent` in front of this host\n" +
	"(docs/split.md): the server announces its connection IDs to the agent at ADDR, and its\n" +
	"own --retry policy takes over whenever the agent is gone. --workers N (default: the CPUs)\n" +
	"spreads HTTP/3 over N UDP sockets of the port, each with its own receive loop; an\n" +
	"sk_reuseport program keeps each connection on its worker by the worker index in its\n" +
	"connection IDs, also when the client's address changes (root or CAP_BPF; without it one\n" +
	"socket serves, and the log says so; docs/reuseport.md). The IDs are QUIC-LB IDs with a\n" +
	"MAC keyed from the root secret (--cid-*, docs/cid.md); an agent must be given the same\n" +
	"--cid-* and --fastpath. --gc-percent N (default 50; GOGC in the environment replaces\n" +
	"the default) is the Go collector's GOGC: half the runtime's default, for about a quarter\n" +
	"less memory per idle connection (docs/performance.md).\n" +
	"At start serve logs a summary of turboretry doctor's checks.\n" +
	"The default address, 127.0.0.1:4433, is\n" +
	"reachable from this machine only; use --addr :443 to serve the network. The limits (--max-conns\n" +
	"to --write-stall-timeout) bound what clients can make the server hold, per worker; their\n" +
	"defaults and why are in docs/fileserver.md. SIZE is bytes, or a number with KiB, MiB or GiB.\n\n" +
	"With --upstream URL serve is a reverse proxy instead (docs/proxy.md): every request, any\n" +
	"method, goes to URL (http://, https:// or unix:/path; repeat it to balance round robin,\n" +
	"skipping for --upstream-fail-timeout an upstream that could not be connected to), with\n" +
	"the same listeners, Retry policy, limits, access log and metrics in front. --route\n" +
	"/PREFIX=URL sends the paths under PREFIX to URL and the rest to --upstream, or without\n" +
	"it to the files (--root or the demo site). Bodies stream both ways and responses are\n" +
	"flushed as the upstream sends them; X-Forwarded-For, -Host, -Proto and Forwarded name the\n" +
	"client and replace what it sent unless it is in --trust-forwarded. An upstream that\n" +
	"cannot be connected to within --upstream-connect-timeout gives 502, one that sends no\n" +
	"response header within --upstream-timeout 504, a body over --max-body-bytes 413.\n" +
	"--upstream-health PATH checks each upstream every --upstream-health-interval and skips\n" +
	"one that does not answer 2xx or 3xx; --upstream-max-conns N bounds the connections per\n" +
	"upstream (a request waiting longer than --upstream-queue-timeout for one gets 503).\n\n" +
	"--prefix-admission (on by default) shares the QUIC limits fairly between client source\n" +
	"prefixes under pressure, rate limits new connections per prefix and keeps part of the\n" +
	"limits for returning clients (--prefix-len4/6, --prefix-rate, --prefix-burst,\n" +
	"--returning-reserve, --max-prefixes; docs/abuse.md).\n\n" +
	"--pid-file FILE writes the process ID to FILE once HTTP/3 serves and lets `turboretry restart\n" +
	"--pid-file FILE` replace this process by a new one (a new binary, certificate or flags)\n" +
	"without dropping a connection: the new process takes the new connections, this one drains\n" +
	"its own for at most --drain-timeout and exits (root or CAP_BPF; docs/operations.md)."

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("serve", serveSynopsis, stderr)
	addr := flags.String("addr", fileserver.DefaultAddr, "listen on `ADDR`, TCP (HTTPS) and UDP (HTTP/3) on the same port; the default is a local port")
	root := flags.String("root", "", "serve the files under `DIR` instead of the demo site")
	dotfiles := flags.Bool("dotfiles", false, "serve and list names starting with a dot (.git, .env); by default they are 404, except under /.well-known")
	listDirs := flags.Bool("list-dirs", false, "list directories that have no index.html; by default they are 404")
	certFile := flags.String("cert", "", "PEM certificate chain `FILE` (with --key)")
	keyFile := flags.String("key", "", "PEM private key `FILE` (with --cert)")
	retry := flags.String("retry", "auto", "when to send a QUIC Retry (`MODE`: auto, always or never)")
	secret := flags.String("secret", "", "token root secret `FILE` (see turboretry keygen); default: one in the state directory")
	metricsAddr := flags.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics")
	offload := flags.String("offload", "none", "address-validation offload (`MODE`: none, xdp for the integrated XDP agent, or split for a separate agent)")
	iface := flags.String("iface", "", "the network interface `IF` the XDP offload filters (with --offload xdp)")
	agentControl := flags.String("agent-control", "", "the split-mode agent's control address `HOST:PORT` (with --offload split)")
	offloadPrefix := prefixRateFlags(flags, "offload-", false)
	qlogDir := flags.String("qlog-dir", "", "write a qlog file per QUIC connection into `DIR` (debugging; one file per connection)")
	limits := limitFlags(flags)
	proxyConfig := proxyFlags(flags)
	stateDir := flags.String("state-dir", "", "keep the generated certificate, key and secret in `DIR` (default $XDG_STATE_HOME/turboretry or ~/.local/state/turboretry)")
	workers := flags.Int("workers", 0, "spread HTTP/3 over `N` sockets and receive loops (default: the number of CPUs)")
	applyGC := gcFlag(flags)
	cids := addCIDFlags(flags)
	pidFile := flags.String("pid-file", "", "write the process ID to `FILE` and accept `turboretry restart --pid-file FILE`")
	drainTimeout := flags.Duration("drain-timeout", 5*time.Minute, "after handing over to a restarted process, wait at most `D` for this one's connections to finish")
	pos, err := parseArgs(flags, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(flags, "unexpected argument %q", pos[0])
	}
	lim, err := limits()
	if err != nil {
		return usageError(flags, "%v", err)
	}
	pcfg, err := proxyConfig()
	if err != nil {
		return usageError(flags, "%v", err)
	}
	if pcfg != nil && len(pcfg.Upstreams) > 0 && *root != "" {
		return usageError(flags, "--root and --upstream: the paths no --route claims go to the upstream; give one or the other")
	}
	mode, err := fileserver.ParseRetryMode(*retry)
	if err != nil {
		return usageError(flags, "--retry: %v", err)
	}
	offMode, err := host.ParseMode(*offload)
	if err != nil {
		return usageError(flags, "--offload: %v", err)
	}
	if (offMode == host.ModeXDP) != (*iface != "") {
		return usageError(flags, "--offload xdp and --iface go together: give both or neither")
	}
	if (offMode == host.ModeSplit) != (*agentControl != "") {
		return usageError(flags, "--offload split and --agent-control go together: give both or neither")
	}
	prefixRate, err := offloadPrefix(lim.PrefixLen4, lim.PrefixLen6)
	if err != nil {
		return usageError(flags, "%v", err)
	}
	if prefixRate.Enabled() && offMode != host.ModeXDP {
		return usageError(flags, "--offload-prefix-rate needs --offload xdp (in the split mode the agent has --prefix-rate)")
	}
	var control netip.AddrPort
	if *agentControl != "" {
		if control, err = netip.ParseAddrPort(*agentControl); err != nil {
			return usageError(flags, "--agent-control: %v (want IP:PORT)", err)
		}
	}
	if (*certFile == "") != (*keyFile == "") {
		return usageError(flags, "--cert and --key go together: give both or neither")
	}
	if err := applyGC(); err != nil {
		return usageError(flags, "%v", err)
	}
	if *workers < 0 || *workers > reuseport.MaxWorkers {
		return usageError(flags, "--workers %d: want 1..%d (0: the number of CPUs)", *workers, reuseport.MaxWorkers)
	}
	layout, cacheOnly, err := cids.layout()
	if err != nil {
		return usageError(flags, "%v", err)
	}
	if *drainTimeout <= 0 {
		return usageError(flags, "--drain-timeout must be positive")
	}
	// A successor of a running serve (turboretry restart) inherits its
	// sockets; a failure before it serves is reported to the predecessor,
	// which keeps serving.
	inherited, err := handover.Inherit()
	if err != nil {
		fmt.Fprintln(stderr, "serve:", err)
		return exitFail
	}
	var fsInherited *fileserver.Inheritance
	if inherited != nil {
		defer inherited.Close()
		if fsInherited, err = inheritance(inherited); err != nil {
			inherited.Fail(err)
			fmt.Fprintln(stderr, "serve:", err)
			return exitFail
		}
	}
	failHandover := func(err error) {
		if inherited != nil {
			inherited.Fail(err)
		}
	}
	if *stateDir == "" && (*certFile == "" || *secret == "" || *pidFile != "") {
		if *stateDir, err = fileserver.DefaultStateDir(); err != nil {
			failHandover(err)
			fmt.Fprintln(stderr, "serve:", err)
			return exitFail
		}
	}

	log := slog.New(slog.NewTextHandler(stderr, nil))
	var handler func(fileserver.Site) (http.Handler, error)
	if pcfg != nil {
		handler = proxy.NewForSite(*pcfg)
		log.Info("reverse proxy", "upstreams", strings.Join(pcfg.Upstreams, " "), "routes", len(pcfg.Routes))
	}
	srv, err := fileserver.New(fileserver.Config{
		Handler:       handler,
		Addr:          *addr,
		Root:          *root,
		Dotfiles:      *dotfiles,
		ListDirs:      *listDirs,
		Limits:        &lim,
		CertFile:      *certFile,
		KeyFile:       *keyFile,
		Retry:         mode,
		SecretFile:    *secret,
		StateDir:      *stateDir,
		MetricsAddr:   *metricsAddr,
		QlogDir:       *qlogDir,
		Workers:       *workers,
		ConnectionIDs: fileserver.IDLayout{ConfigID: layout.ConfigID, HostID: layout.HostID, NonceLen: layout.NonceLen},
		Offload:       host.Config{Mode: offMode, Iface: *iface, AgentControl: control, CacheOnly: cacheOnly, PrefixRate: prefixRate},
		Logger:        log,
		Restartable:   *pidFile != "",
		Inherited:     fsInherited,
	})
	if err != nil {
		failHandover(err)
		fmt.Fprintln(stderr, "serve:", err)
		return exitFail
	}
	serveCtx, drain := context.WithCancel(ctx)
	defer drain()
	var restart *restarter
	if *pidFile != "" {
		restart = &restarter{srv: srv, log: log, pidFile: *pidFile, stateDir: *stateDir, drainTimeout: *drainTimeout,
			inherited: inherited, drain: drain}
		defer restart.stop()
	}

	log.Info("doctor: " + doctor.Summary(doctor.Run(doctor.Host(), doctor.Options{Iface: *iface, Workers: srv.Workers()})))

	// Registered before anything is printed, so whoever waits for the
	// output below may send SIGHUP without killing the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, append([]os.Signal{syscall.SIGHUP}, offloadSignals...)...)
	defer signal.Stop(hup)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-hup:
				switch {
				case sig == pauseSignal:
					log.Info("SIGUSR1: pausing the offload agent (fail-open)", "running", srv.PauseOffload())
					continue
				case sig == resumeSignal:
					log.Info("SIGUSR2: resuming the offload agent", "running", srv.ResumeOffload())
					continue
				}
				log.Info("SIGHUP: reloading certificate and secret")
				srv.Reload() // logs its own outcome
			case <-done:
				return
			}
		}
	}()

	fmt.Fprintf(stdout, "Serving %s\n", srv.URL())
	fmt.Fprintf(stdout, "SPKI sha256 (base64): %s\n", srv.SPKIHash())
	if restart != nil || inherited != nil {
		go func() {
			select {
			case <-srv.HTTP3Ready():
			case <-done:
				return
			}
			if restart != nil {
				if err := restart.start(); err != nil {
					log.Error("restart: unavailable", "err", err)
				}
			}
			if inherited != nil {
				if err := inherited.Ready(); err != nil {
					log.Warn("restart: telling the previous process we serve", "err", err)
				}
			}
		}()
	}
	if err := srv.Serve(serveCtx); err != nil {
		failHandover(err)
		fmt.Fprintln(stderr, "serve:", err)
		return exitFail
	}
	return exitOK
}
