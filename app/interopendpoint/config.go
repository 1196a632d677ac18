package interopendpoint

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
)

// The runner's fixed paths (its endpoint contract).
const (
	DefaultWWW       = "/www"
	DefaultDownloads = "/downloads"
	DefaultCertFile  = "/certs/cert.pem"
	DefaultKeyFile   = "/certs/priv.key"
	DefaultCAFile    = "/certs/ca.pem"
	// DefaultAddr is where the server listens: UDP port 443 on every
	// address of both families (the ipv6 and server46 cases need both).
	DefaultAddr = "[::]:443"
)

// Config is what one endpoint run needs. FromEnv fills it the way the
// runner's environment says.
type Config struct {
	Role     Role
	TestCase string
	// Requests are the client's URLs (REQUESTS); the files go to
	// Downloads under the last element of each URL's path.
	Requests  []string
	Downloads string
	// WWW is the directory the server serves.
	WWW string
	// CertFile and KeyFile are the server's certificate chain (leaf
	// first) and private key, PEM.
	CertFile, KeyFile string
	// CAFile is the root the client trusts; empty, or a file that does not
	// exist, means the client does not verify the server's certificate.
	CAFile string
	// KeyLogFile receives the TLS secrets of every connection in the NSS
	// key log format (SSLKEYLOGFILE), appended; empty: none.
	KeyLogFile string
	// QlogDir receives one qlog file per connection (QLOGDIR); empty: none.
	QlogDir string
	// Addr is the server's UDP listen address; DefaultAddr when empty.
	Addr string
	// Conn, when set, is the server's socket, already bound (Addr is then
	// not used); the server closes it when it returns.
	Conn *net.UDPConn
	// Logger receives progress and errors; nil means slog.Default().
	Logger *slog.Logger
}

// FromEnv builds the Config the runner's environment describes: ROLE,
// TESTCASE, REQUESTS (space separated), SSLKEYLOGFILE and QLOGDIR, with the
// contract's fixed paths.
func FromEnv(getenv func(string) string) Config {
	return Config{
		Role:       Role(getenv("ROLE")),
		TestCase:   getenv("TESTCASE"),
		Requests:   strings.Fields(getenv("REQUESTS")),
		Downloads:  DefaultDownloads,
		WWW:        DefaultWWW,
		CertFile:   DefaultCertFile,
		KeyFile:    DefaultKeyFile,
		CAFile:     DefaultCAFile,
		KeyLogFile: getenv("SSLKEYLOGFILE"),
		QlogDir:    getenv("QLOGDIR"),
		Addr:       DefaultAddr,
	}
}

// Run runs the endpoint cfg describes until it is done (client) or ctx ends
// (server). It returns ErrUnsupported (wrapped) for a role or TESTCASE this
// endpoint does not implement, before doing anything else.
func Run(ctx context.Context, cfg Config) error {
	if err := checkCase(cfg.Role, cfg.TestCase); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	keyLog, err := openKeyLog(cfg.KeyLogFile)
	if err != nil {
		return err
	}
	if keyLog != nil {
		defer keyLog.Close()
	}
	if cfg.Role == RoleServer {
		return runServer(ctx, &cfg, keyLog)
	}
	return runClient(ctx, &cfg, keyLog)
}

// keyLogWriter serializes the key log writes of concurrent connections.
type keyLogWriter struct {
	mu sync.Mutex
	f  *os.File
}

// openKeyLog opens the SSLKEYLOGFILE for appending; nil without a path.
func openKeyLog(path string) (*keyLogWriter, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("interop: key log: %w", err)
	}
	return &keyLogWriter{f: f}, nil
}

func (w *keyLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Write(p)
}

func (w *keyLogWriter) Close() error { return w.f.Close() }

// writer returns w as the io.Writer of tls.Config.KeyLogWriter: nil (no
// key log) when w is nil, not a non-nil interface holding a nil pointer.
func (w *keyLogWriter) writer() io.Writer {
	if w == nil {
		return nil
	}
	return w
}
