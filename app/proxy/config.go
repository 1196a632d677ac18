package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the Config durations.
const (
	DefaultConnectTimeout  = 2 * time.Second
	DefaultResponseTimeout = 60 * time.Second
	DefaultFailTimeout     = 10 * time.Second
	DefaultHealthInterval  = 5 * time.Second
	DefaultHealthTimeout   = 5 * time.Second
	DefaultQueueTimeout    = 10 * time.Second
)

// defaultIdleConnsPerUpstream is how many idle connections each upstream
// keeps for reuse (net/http's default of 2 makes a busy proxy dial for
// most requests).
const defaultIdleConnsPerUpstream = 256

// Route sends the requests whose path is under Prefix to Upstream.
type Route struct {
	// Prefix is a path starting with "/". It matches the path itself
	// and, when it does not end with "/", the paths below it: "/api"
	// matches "/api" and "/api/v1" but not "/apis".
	Prefix string
	// Upstream is an upstream URL, as in Config.Upstreams. Routes with
	// the same prefix share their requests round robin.
	Upstream string
}

// ParseRoute parses serve's --route value, "/prefix=URL".
func ParseRoute(s string) (Route, error) {
	prefix, target, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(prefix, "/") || target == "" {
		return Route{}, fmt.Errorf("route %q: want /prefix=URL", s)
	}
	return Route{Prefix: prefix, Upstream: target}, nil
}

// Config configures a Handler.
type Config struct {
	// Upstreams receive, round robin, the requests that no route
	// claims; empty sends those to Files. Each is http://host:port,
	// https://host:port (optionally with a base path that request
	// paths are appended to), h2c://host:port (HTTP/2 with prior
	// knowledge over TCP, as gRPC servers speak without TLS) or
	// unix:/path/to/socket (HTTP/1.1 over a Unix domain socket).
	Upstreams []string
	// Routes send path prefixes to other upstreams; the longest prefix
	// that matches wins.
	Routes []Route
	// Files answers the requests no route or upstream claims (the file
	// server); nil answers them 404.
	Files http.Handler

	// CAFile is a PEM file of the certificates https upstreams must
	// chain to; empty means the system's roots.
	CAFile string
	// Insecure skips the verification of https upstreams' certificates.
	Insecure bool
	// ConnectTimeout bounds the connection to an upstream (TCP and
	// TLS); past it the request is answered 502. Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ResponseTimeout bounds the wait for an upstream's response header
	// once the request is sent (with its body); past it the request is
	// answered 504. Zero means DefaultResponseTimeout, negative none.
	ResponseTimeout time.Duration
	// FailTimeout is how long an upstream that could not be connected
	// to is skipped by the round robin. Zero means DefaultFailTimeout.
	FailTimeout time.Duration
	// MaxBodyBytes bounds a request body; a larger one is answered 413
	// (at once when its Content-Length says so). Zero means no limit.
	MaxBodyBytes int64
	// TrustForwarded are the peers whose X-Forwarded-For, -Host,
	// -Proto and Forwarded fields are kept and appended to; everyone
	// else's are replaced.
	TrustForwarded []netip.Prefix
	// EarlyData is what becomes of non-idempotent requests that arrived
	// in 0-RTT: answered 425 (the default) or held until the handshake
	// completes.
	EarlyData EarlyDataPolicy
	// HealthPath, when set, turns on active health checks: every
	// HealthInterval each upstream gets a GET of this path (below its
	// base path), and one that does not answer 2xx or 3xx within
	// HealthTimeout is skipped by the round robin until a check passes
	// again. A check that finds every connection busy
	// (MaxConnsPerUpstream) until its timeout leaves the state as it was.
	HealthPath string
	// HealthInterval is the time between health checks. Zero means
	// DefaultHealthInterval.
	HealthInterval time.Duration
	// HealthTimeout bounds a health check, connection included. Zero
	// means DefaultHealthTimeout.
	HealthTimeout time.Duration
	// MaxConnsPerUpstream bounds the connections to each upstream (idle,
	// in use and being dialled); a request that finds them all busy waits
	// for one up to QueueTimeout, then is answered 503. Zero means no
	// limit.
	MaxConnsPerUpstream int
	// QueueTimeout bounds the wait for a connection under
	// MaxConnsPerUpstream. Zero means DefaultQueueTimeout.
	QueueTimeout time.Duration
	// MaxIdleConnsPerUpstream bounds the idle connections kept per
	// upstream; zero means 256.
	MaxIdleConnsPerUpstream int

	// Metrics, when set, receives the proxy's metrics.
	Metrics prometheus.Registerer
	// Logger receives upstream errors; nil discards.
	Logger *slog.Logger
}

func (c *Config) fillDefaults() {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ResponseTimeout == 0 {
		c.ResponseTimeout = DefaultResponseTimeout
	}
	if c.FailTimeout <= 0 {
		c.FailTimeout = DefaultFailTimeout
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.MaxIdleConnsPerUpstream <= 0 {
		c.MaxIdleConnsPerUpstream = defaultIdleConnsPerUpstream
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) check() error {
	if len(c.Upstreams) == 0 && len(c.Routes) == 0 {
		return errors.New("proxy: no upstream and no route")
	}
	if c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		return fmt.Errorf("proxy: health check path %q: want a path starting with /", c.HealthPath)
	}
	if c.MaxConnsPerUpstream < 0 {
		return errors.New("proxy: negative connection limit (0 means none)")
	}
	if c.MaxBodyBytes < 0 {
		return errors.New("proxy: negative body size limit (0 means none)")
	}
	return nil
}

// target is a parsed upstream URL.
type target struct {
	url        *url.URL // scheme, host and base path requests go to
	unixSocket string   // the socket path of a unix: upstream
	h2c        bool     // HTTP/2 with prior knowledge over TCP (h2c://)
}

// parseTarget parses an upstream URL.
func parseTarget(s string) (target, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, ".") {
			return target{}, fmt.Errorf("upstream %q: want unix:/path/to/socket", s)
		}
		// The host is a placeholder: the socket is dialled whatever it
		// says, and the client's Host is forwarded.
		return target{url: &url.URL{Scheme: "http", Host: "localhost"}, unixSocket: path}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return target{}, fmt.Errorf("upstream %q: %w", s, err)
	}
	h2c := u.Scheme == "h2c"
	if h2c {
		// Requests go out as http:// URLs; the Transport speaks
		// HTTP/2 on them without upgrade (gRPC servers' plaintext).
		u.Scheme = "http"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return target{}, fmt.Errorf("upstream %q: want an http://, https://, h2c:// or unix: URL", s)
	case u.Host == "":
		return target{}, fmt.Errorf("upstream %q: no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return target{}, fmt.Errorf("upstream %q: want no user, query or fragment", s)
	}
	return target{url: u, h2c: h2c}, nil
}

// CheckUpstream reports whether s is an upstream URL New accepts.
func CheckUpstream(s string) error {
	_, err := parseTarget(s)
	return err
}
