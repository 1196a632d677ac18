package fileserver

import "time"

// QUICIdleTimeout is the idle timeout the HTTP/3 listener advertises
// unless Limits.IdleTimeout says otherwise. The fast-path aging window must
// not be shorter (host.Config.RotateEvery).
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
