package interop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
)

// startAttempts is how often StartServer tries a new port: the TCP port is
// free when picked, but the UDP port of the same number may not be.
const startAttempts = 3

// stopTimeout bounds how long Stop waits for a graceful shutdown before it
// closes the server outright.
const stopTimeout = 5 * time.Second

// Server is our file server running in this process for a peer to talk
// to, with its log kept in memory as JSON lines.
type Server struct {
	*fileserver.Server
	log    *logBuffer
	cancel context.CancelFunc
	done   chan error
}

// StartServer starts a file server with cfg and returns once its HTTP/3
// listener is bound (fileserver.Server.HTTP3Ready), or with an error when it fails first or ctx ends.
// An empty cfg.Addr means 127.0.0.1 with a free port; cfg.StateDir is
// required (the certificate and secret are generated there); cfg.Logger is
// replaced by a JSON logger at debug level whose output Log returns. The
// caller must call Stop.
func StartServer(ctx context.Context, cfg fileserver.Config) (*Server, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("interop: StartServer needs a state directory")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interop: StartServer: %w", err)
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = stopTimeout
	}
	pickPort := cfg.Addr == ""
	var err error
	for range startAttempts {
		if pickPort {
			cfg.Addr = "127.0.0.1:0"
		}
		var s *Server
		if s, err = startOnce(ctx, cfg); err == nil {
			return s, nil
		}
		if !pickPort || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func startOnce(ctx context.Context, cfg fileserver.Config) (*Server, error) {
	lb := newLogBuffer()
	cfg.Logger = slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fs, err := fileserver.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("interop: starting the file server: %w", err)
	}
	serveCtx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: fs, log: lb, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- fs.Serve(serveCtx) }()
	select {
	case <-fs.HTTP3Ready():
		return s, nil
	case err := <-s.done:
		cancel()
		if err == nil {
			err = errors.New("stopped before serving HTTP/3")
		}
		return nil, fmt.Errorf("interop: file server: %w\nlog:\n%s", err, lb.String())
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("interop: waiting for the HTTP/3 listener: %w", ctx.Err())
	}
}

// Port returns the port number, the same for TCP and UDP.
func (s *Server) Port() int { return s.Addr().(*net.TCPAddr).Port }

// Stop shuts the server down gracefully, or at once when that takes longer
// than stopTimeout, and returns Serve's error. It may be called again.
func (s *Server) Stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // keep the result for a later Stop
		return err
	case <-time.After(2 * stopTimeout):
		// Serve enforces ShutdownTimeout itself; this is a backstop so
		// that a bug there fails the test instead of hanging it.
		s.Close()
		return errors.New("interop: the file server did not stop in time")
	}
}

// Log returns everything the server logged so far, as JSON lines.
func (s *Server) Log() string { return s.log.String() }

// Requests returns the access records logged so far.
func (s *Server) Requests() ([]AccessRecord, error) {
	data, _ := s.log.snapshot()
	return ParseAccessLog(data)
}

// WaitRequest returns the first access record for path, waiting for it
// until ctx ends: a handler logs after it has written the response, which
// can be after the client has read it.
func (s *Server) WaitRequest(ctx context.Context, path string) (AccessRecord, error) {
	for {
		data, changed := s.log.snapshot()
		recs, err := ParseAccessLog(data)
		if err != nil {
			return AccessRecord{}, err
		}
		for _, r := range recs {
			if r.Path == path {
				return r, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return AccessRecord{}, fmt.Errorf("no access-log line for %s: %w", path, ctx.Err())
		}
	}
}
