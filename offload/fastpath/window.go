package fastpath

import (
	"fmt"
	"time"
)

// WindowError is CheckWindow's error: an aging window shorter than the
// idle timeout.
type WindowError struct {
	Window, IdleTimeout time.Duration
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("the fast-path aging window T_W (%v) is shorter than the QUIC idle timeout (%v): "+
		"quiet but live connections would be dropped; use a window of at least %v", e.Window, e.IdleTimeout, e.IdleTimeout)
}

// CheckWindow is the one check of the rule T_W >= idle timeout (docs/design.md,
// "Fast-path cache"): a connection ID not seen for a window may be
// forgotten, so a window tw shorter than the server's QUIC idle timeout
// could drop a connection that is quiet but alive. Every configuration
// that sets both (offload/host, offload/split, turboretry agent) calls it.
func CheckWindow(tw, idleTimeout time.Duration) error {
	if tw < idleTimeout {
		return &WindowError{Window: tw, IdleTimeout: idleTimeout}
	}
	return nil
}
