package fileserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// DefaultAddr is where the server listens when no address is given: a local
// port, so that running the command with no flags exposes nothing to the
// network. 4433 rather than 443 because it needs no privileges.
const DefaultAddr = "127.0.0.1:4433"

// DefaultShutdownTimeout bounds how long a graceful shutdown waits for
// in-flight requests before closing their connections.
const DefaultShutdownTimeout = 10 * time.Second

// RetryMode says when the QUIC listener sends a Retry before accepting a
// connection. The QUIC side interprets it; this package only carries it.
type RetryMode uint8

// Retry modes.
const (
	RetryAuto   RetryMode = iota // Retry only when the server is under load
	RetryAlways                  // validate every new client address first
	RetryNever                   // never send a Retry
)

var retryNames = [...]string{RetryAuto: "auto", RetryAlways: "always", RetryNever: "never"}

// String returns the flag spelling of m.
func (m RetryMode) String() string {
	if int(m) < len(retryNames) {
		return retryNames[m]
	}
	return fmt.Sprintf("RetryMode(%d)", m)
}

// ParseRetryMode parses the --retry flag: "auto", "always" or "never".
func ParseRetryMode(s string) (RetryMode, error) {
	for m, n := range retryNames {
		if s == n {
			return RetryMode(m), nil
		}
	}
	return 0, fmt.Errorf("invalid retry mode %q: want auto, always or never", s)
}

// IDLayout is the operator's part of the server's connection ID layout
// (quiclb.Config without the MAC key, which derives from the root secret).
type IDLayout struct {
	// ConfigID is the QUIC-LB config rotation codepoint, 0..6.
	ConfigID uint8
	// HostID is this server's part of the QUIC-LB server ID, 0..13 bytes.
	HostID []byte
	// NonceLen is the nonce length; 0 means quiclb.DefaultNonceLen.
	NonceLen int
}

// codec returns the layout's codec, with the MAC key of kr.
func (l IDLayout) codec(kr *token.KeyRing) (*quiclb.Codec, error) {
	key := quiclb.KeyFromRing(kr)
	return quiclb.NewCodec(quiclb.Config{ConfigID: l.ConfigID, HostID: l.HostID, NonceLen: l.NonceLen, MACKey: &key})
}

// Site is what Config.Handler builds its handler from.
type Site struct {
	// Files serves Root (or the demo site): GET and HEAD only, as the
	// file server answers.
	Files http.Handler
	// Metrics is the registry /metrics serves.
	Metrics prometheus.Registerer
	// Logger is the server's logger.
	Logger *slog.Logger
}

// Config configures a Server. Only StateDir is needed when the certificate
// or the secret is generated; everything else has a default.
type Config struct {
	// Addr is the TCP address, and later the UDP one: the port is shared
	// so that the Alt-Svc header can name it. Empty means DefaultAddr.
	Addr string
	// Root is the directory to serve; empty serves the embedded demo site.
	Root string
	// Handler, when set, builds the handler that answers requests in
	// place of the file server alone (serve --upstream and --route:
	// app/proxy). New calls it once with the file handler, to which it
	// may hand the paths it does not answer itself. The listeners,
	// Retry policy, limits, Alt-Svc, access log, request metrics and
	// graceful shutdown stay the server's. A handler that is an
	// io.Closer is closed when the server stops.
	Handler func(Site) (http.Handler, error)
	// Dotfiles serves, and lists, names starting with a dot (.git, .env,
	// .htpasswd). Off by default: such files are 404, except under
	// /.well-known (RFC 8615).
	Dotfiles bool
	// ListDirs lists the files of a directory that has no index.html. Off
	// by default: such a directory is 404.
	ListDirs bool
	// CertFile and KeyFile are a PEM certificate chain and key; both empty
	// means a self-signed certificate kept in StateDir.
	CertFile, KeyFile string
	// Retry is handed to the QUIC listener. With an offload it is the
	// host's fail-open fallback policy.
	Retry RetryMode
	// Workers is the number of UDP sockets, each with its own receive loop
	// and quic.Transport, that HTTP/3 is spread over (serve --workers); a
	// connection lives on one worker, and an sk_reuseport program keeps
	// its packets there whatever address the client sends from
	// (docs/reuseport.md). 0 means the number of CPUs. Where the program
	// cannot be loaded (no CAP_BPF), the listener falls back to one
	// socket and says so in the log.
	Workers int
	// ConnectionIDs is the layout of the server's connection IDs (serve
	// --cid-*): QUIC-LB with the worker octet and a MAC keyed from the
	// root secret (docs/cid.md). The zero value is the default layout of
	// 10 bytes.
	ConnectionIDs IDLayout
	// Offload puts a Retry agent in front of the QUIC listener
	// (offload/host); the zero value runs none. Its KeyRing and Logger are
	// the server's, its IdleTimeout the listener's (Limits.IdleTimeout).
	Offload host.Config
	// Limits bound the listeners' resources; nil means DefaultLimits().
	Limits *Limits
	// SecretFile is the token root secret; empty means one kept in
	// StateDir, created on first use.
	SecretFile string
	// StateDir holds the generated certificate, key and secret.
	StateDir string
	// MetricsAddr, when set, is a plain-HTTP address serving /metrics.
	MetricsAddr string
	// QlogDir, when set, receives a qlog file (JSON-SEQ) per QUIC
	// connection, named after its original destination connection ID: a
	// debugging aid, each connection costs a file.
	QlogDir string
	// Logger receives the access log and server events; nil discards.
	Logger *slog.Logger
	// ShutdownTimeout bounds graceful shutdown; zero means the default.
	// Server.Drain replaces it for the drain after a handover.
	ShutdownTimeout time.Duration
	// Restartable opens the HTTP/3 sockets so that a successor process
	// can take over new connections (serve --pid-file, Server.Handover):
	// with the steering program also for one worker. Without the program
	// (no CAP_BPF) Handover refuses and says why.
	Restartable bool
	// Inherited, in a successor, is what the running process handed over:
	// the server listens on its TCP (and metrics) listeners and joins its
	// steering program instead of binding, and takes new HTTP/3
	// connections once its listeners are up (HTTP3Ready).
	Inherited *Inheritance

	// enterNetns, set by tests, runs the HTTP/3 listener's socket and
	// offload setup in the server's network namespace.
	enterNetns func(func() error) error
}

func (c *Config) fillDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Workers == 0 {
		c.Workers = min(runtime.NumCPU(), reuseport.MaxWorkers)
	}
	if c.Limits == nil {
		d := DefaultLimits()
		c.Limits = &d
	}
	// The offload's T_W check compares against the listener's idle
	// timeout.
	c.Offload.IdleTimeout = c.Limits.idleTimeout()
}

func (c *Config) check() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("--cert and --key go together: give both or neither")
	}
	if c.StateDir == "" && (c.CertFile == "" || c.SecretFile == "") {
		return fmt.Errorf("a state directory is needed for the generated certificate or secret")
	}
	if int(c.Retry) >= len(retryNames) {
		return fmt.Errorf("invalid retry mode %v", c.Retry)
	}
	if c.Workers < 0 || c.Workers > reuseport.MaxWorkers {
		return fmt.Errorf("--workers %d: want 1..%d (0: the number of CPUs)", c.Workers, reuseport.MaxWorkers)
	}
	if _, err := quiclb.NewCodec(quiclb.Config{ConfigID: c.ConnectionIDs.ConfigID, HostID: c.ConnectionIDs.HostID,
		NonceLen: c.ConnectionIDs.NonceLen, MACKey: new(quiclb.Key)}); err != nil {
		return fmt.Errorf("connection ID layout: %w", err)
	}
	if err := c.Limits.Check(); err != nil {
		return err
	}
	return c.Offload.Check()
}
