package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"strings"

	"github.com/turboretry/turboretry/app/proxy"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// proxyFlags registers serve's reverse-proxy flags and returns a function
// that reads them back once parsed: nil without --upstream and --route
// (serve is the file server).
func proxyFlags(fs *flag.FlagSet) func() (*proxy.Config, error) {
	var upstreams, routes, trust stringList
	fs.Var(&upstreams, "upstream", "forward requests to `URL` (http://host:port, https://host:port, h2c://host:port for HTTP/2 without TLS, or unix:/path); repeat to balance round robin")
	fs.Var(&routes, "route", "`/PREFIX=URL`: forward the paths under PREFIX to URL; repeat for more (same prefix: balanced); the rest go to --upstream or the files")
	caFile := fs.String("upstream-ca", "", "PEM `FILE` of the CA certificates that https upstreams must chain to (default: the system's)")
	insecure := fs.Bool("upstream-insecure", false, "do not verify https upstreams' certificates")
	connectTimeout := fs.Duration("upstream-connect-timeout", proxy.DefaultConnectTimeout, "time to connect to an upstream (TCP and TLS); past it the request gets 502")
	responseTimeout := fs.Duration("upstream-timeout", proxy.DefaultResponseTimeout, "time an upstream has to send its response header once the request is sent; past it the request gets 504; 0: no limit")
	failTimeout := fs.Duration("upstream-fail-timeout", proxy.DefaultFailTimeout, "how long an upstream that could not be connected to is skipped")
	healthPath := fs.String("upstream-health", "", "check each upstream with a GET of `PATH` every --upstream-health-interval; one that does not answer 2xx or 3xx is skipped until it does")
	healthInterval := fs.Duration("upstream-health-interval", proxy.DefaultHealthInterval, "time between health checks (with --upstream-health)")
	healthTimeout := fs.Duration("upstream-health-timeout", proxy.DefaultHealthTimeout, "time a health check has to answer, connection included (with --upstream-health)")
	maxConns := fs.Int("upstream-max-conns", 0, "at most `N` connections to each upstream; a request that finds them busy waits up to --upstream-queue-timeout, then gets 503; 0: no limit")
	queueTimeout := fs.Duration("upstream-queue-timeout", proxy.DefaultQueueTimeout, "how long a request waits for a connection under --upstream-max-conns; past it: 503")
	maxBody := sizeFlag(fs, "max-body-bytes", 0, "largest proxied request body in `SIZE`; larger ones get 413; 0: no limit")
	earlyData := fs.String("early-data", "reject", "what becomes of a non-idempotent request that arrived in 0-RTT (RFC 8470): reject (425 Too Early) or hold (until the handshake completes)")
	fs.Var(&trust, "trust-forwarded", "keep and append to the X-Forwarded-* and Forwarded fields of clients in `CIDR` (a proxy in front); repeatable")
	return func() (*proxy.Config, error) {
		if len(upstreams) == 0 && len(routes) == 0 {
			set := false
			fs.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "upstream-ca", "upstream-insecure", "upstream-connect-timeout", "upstream-timeout", "upstream-fail-timeout", "max-body-bytes", "trust-forwarded", "early-data",
					"upstream-health", "upstream-health-interval", "upstream-health-timeout", "upstream-max-conns", "upstream-queue-timeout":
					set = true
				}
			})
			if set {
				return nil, errors.New("the upstream flags need --upstream or --route")
			}
			return nil, nil
		}
		cfg := &proxy.Config{
			Upstreams:      upstreams,
			CAFile:         *caFile,
			Insecure:       *insecure,
			ConnectTimeout: *connectTimeout,
			FailTimeout:    *failTimeout,
			MaxBodyBytes:   int64(min(uint64(*maxBody), math.MaxInt64)),
			HealthPath:     *healthPath,
			HealthInterval: *healthInterval,
			HealthTimeout:  *healthTimeout,
			QueueTimeout:   *queueTimeout,
		}
		policy, err := proxy.ParseEarlyDataPolicy(*earlyData)
		if err != nil {
			return nil, fmt.Errorf("--early-data: %w", err)
		}
		cfg.EarlyData = policy
		for _, u := range upstreams {
			if err := proxy.CheckUpstream(u); err != nil {
				return nil, fmt.Errorf("--upstream: %w", err)
			}
		}
		for _, s := range routes {
			r, err := proxy.ParseRoute(s)
			if err == nil {
				err = proxy.CheckUpstream(r.Upstream)
			}
			if err != nil {
				return nil, fmt.Errorf("--route: %w", err)
			}
			cfg.Routes = append(cfg.Routes, r)
		}
		switch {
		case *connectTimeout <= 0:
			return nil, errors.New("--upstream-connect-timeout must be positive")
		case *responseTimeout < 0:
			return nil, errors.New("--upstream-timeout must not be negative (0: no limit)")
		case *failTimeout <= 0:
			return nil, errors.New("--upstream-fail-timeout must be positive")
		case *healthPath != "" && !strings.HasPrefix(*healthPath, "/"):
			return nil, fmt.Errorf("--upstream-health %q: want a path starting with /", *healthPath)
		case *healthInterval <= 0:
			return nil, errors.New("--upstream-health-interval must be positive")
		case *healthTimeout <= 0:
			return nil, errors.New("--upstream-health-timeout must be positive")
		case *maxConns < 0:
			return nil, errors.New("--upstream-max-conns must not be negative (0: no limit)")
		case *queueTimeout <= 0:
			return nil, errors.New("--upstream-queue-timeout must be positive")
		}
		cfg.MaxConnsPerUpstream = *maxConns
		cfg.ResponseTimeout = *responseTimeout
		if cfg.ResponseTimeout == 0 {
			cfg.ResponseTimeout = -1 // proxy.Config: negative is none
		}
		for _, s := range trust {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return nil, fmt.Errorf("--trust-forwarded %q: want a CIDR (192.0.2.0/24) or an address", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			cfg.TrustForwarded = append(cfg.TrustForwarded, p.Masked())
		}
		return cfg, nil
	}
}
