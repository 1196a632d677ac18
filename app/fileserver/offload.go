package fileserver

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/metrics"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/token"
)

// OffloadMode says where the Retry agent runs (DESIGN.md, "Address
// validation architecture").
type OffloadMode uint8

// Offload modes.
const (
	// OffloadNone: the host validates addresses by itself.
	OffloadNone OffloadMode = iota
	// OffloadXDP: the integrated XDP mode. The agent runs in this process
	// on AF_XDP sockets behind an XDP fast path on Offload.Iface.
	OffloadXDP
	// OffloadSplit: the split (DPU) mode. The agent is a separate process
	// in front of this host (`turboretry agent`, docs/split.md); the
	// server announces every connection ID it routes to the agent's
	// control address, Offload.AgentControl.
	OffloadSplit
)

var offloadNames = [...]string{OffloadNone: "none", OffloadXDP: "xdp", OffloadSplit: "split"}

// String returns the flag spelling of m.
func (m OffloadMode) String() string {
	if int(m) < len(offloadNames) {
		return offloadNames[m]
	}
	return fmt.Sprintf("OffloadMode(%d)", m)
}

// ParseOffloadMode parses the --offload flag: "none", "xdp" or "split".
func ParseOffloadMode(s string) (OffloadMode, error) {
	for m, n := range offloadNames {
		if s == n {
			return OffloadMode(m), nil
		}
	}
	return 0, fmt.Errorf("invalid offload mode %q: want none, xdp or split", s)
}

// QUICIdleTimeout is the idle timeout the HTTP/3 listener advertises. The
// fast-path aging window must not be shorter (see OffloadConfig.RotateEvery).
const QUICIdleTimeout = 30 * time.Second

// OffloadConfig configures the address-validation offload of the HTTP/3
// listener.
type OffloadConfig struct {
	// Mode is OffloadNone (the zero value), OffloadXDP or OffloadSplit.
	Mode OffloadMode
	// Iface is the interface the server receives on; required with
	// OffloadXDP.
	Iface string
	// StaleAfter is how old the agent's heartbeat may grow before the XDP
	// program fails open; 0 means the datapath's default.
	StaleAfter time.Duration
	// RotateEvery is the fast-path aging window T_W; 0 means
	// fastpath.DefaultWindow. A connection ID not seen for T_W may be
	// forgotten, so T_W below QUICIdleTimeout could drop a connection that
	// is legitimately quiet: such a configuration is refused.
	RotateEvery time.Duration
	// AgentControl is the split-mode agent's control address, where the
	// server announces its connection IDs; required with OffloadSplit.
	AgentControl netip.AddrPort

	// enter, set by tests, runs the listener's socket and datapath setup
	// in the server's network namespace.
	enter func(func() error) error
	// admitted, set by tests, sees every connection ID the stack handed
	// to the fast path and the outcome (on the connection's goroutine).
	admitted func(cid []byte, err error)
}

func (c *OffloadConfig) check() error {
	switch c.Mode {
	case OffloadNone:
		if c.Iface != "" {
			return fmt.Errorf("--iface %s needs --offload xdp", c.Iface)
		}
		if c.AgentControl.IsValid() {
			return fmt.Errorf("--agent-control %v needs --offload split", c.AgentControl)
		}
		return nil
	case OffloadSplit:
		if !c.AgentControl.IsValid() {
			return fmt.Errorf("--offload split needs --agent-control: the agent's control address (host:port)")
		}
		if c.Iface != "" {
			return fmt.Errorf("--iface %s is for --offload xdp; in split mode the agent owns the interfaces", c.Iface)
		}
		return nil
	case OffloadXDP:
		if c.AgentControl.IsValid() {
			return fmt.Errorf("--agent-control %v needs --offload split", c.AgentControl)
		}
	default:
		return fmt.Errorf("invalid offload mode %v", c.Mode)
	}
	if c.Iface == "" {
		return fmt.Errorf("--offload xdp needs --iface: the interface the server receives on")
	}
	if c.StaleAfter < 0 || c.RotateEvery < 0 {
		return fmt.Errorf("offload: negative StaleAfter or RotateEvery")
	}
	if tw := c.window(); tw < QUICIdleTimeout {
		return fmt.Errorf("offload: the fast-path aging window T_W (%v) is shorter than the QUIC idle timeout (%v): "+
			"quiet but live connections would be dropped; use a window of at least %v", tw, QUICIdleTimeout, QUICIdleTimeout)
	}
	return nil
}

// window returns T_W with the default applied.
func (c *OffloadConfig) window() time.Duration {
	if c.RotateEvery == 0 {
		return fastpath.DefaultWindow
	}
	return c.RotateEvery
}

// inNetns runs fn where the listener's sockets belong: in the caller's
// network namespace, or the test's.
func (c *OffloadConfig) inNetns(fn func() error) error {
	if c.enter != nil {
		return c.enter(fn)
	}
	return fn()
}

// offloader is a running offload: the integrated XDP datapath.
type offloader interface {
	Pause()
	Resume()
	Paused() bool
	WriteMetrics(w io.Writer) error
	SetKeyRing(kr *token.KeyRing) error
	Close() error
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
