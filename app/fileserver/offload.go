package fileserver

import (
	"io"
	"net/http"
	"time"

	"github.com/turboretry/turboretry/internal/metrics"
)

// QUICIdleTimeout is the idle timeout the HTTP/3 listener advertises. The
// fast-path aging window must not be shorter (host.Config.RotateEvery).
const QUICIdleTimeout = 30 * time.Second

// inNetns runs fn where the HTTP/3 listener's sockets belong: in the
// caller's network namespace, or the test's.
func (s *Server) inNetns(fn func() error) error {
	if s.cfg.enterNetns != nil {
		return s.cfg.enterNetns(fn)
	}
	return fn()
}

// PauseOffload stops the offload agent (fault injection, SIGUSR1 in
// serve): after the heartbeat goes stale the fast path passes everything
// and the host's own address validation takes over. It reports whether an
// offload is running.
func (s *Server) PauseOffload() bool {
	o := s.h3.offload()
	if o == nil {
		return false
	}
	o.Pause()
	return true
}

// ResumeOffload restarts a paused offload agent (SIGUSR2 in serve). It
// reports whether an offload is running.
func (s *Server) ResumeOffload() bool {
	o := s.h3.offload()
	if o == nil {
		return false
	}
	o.Resume()
	return true
}

// metricsHandler serves the registry followed by the offload datapath's
// metrics, when one runs.
func (s *Server) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", metrics.ContentType)
		w.Header().Set("Cache-Control", "no-store")
		if req.Method == http.MethodHead {
			return
		}
		if err := s.writeMetrics(w); err != nil {
			s.log.Warn("metrics", "err", err)
		}
	})
}

// writeMetrics writes the registry and the offload's metrics.
func (s *Server) writeMetrics(w io.Writer) error {
	if err := s.reg.WriteText(w); err != nil {
		return err
	}
	if o := s.h3.offload(); o != nil {
		return o.WriteMetrics(w)
	}
	return nil
}
