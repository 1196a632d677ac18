package host

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// Mode says where the Retry agent runs.
type Mode uint8

// Modes.
const (
	// ModeNone: no agent; the host validates addresses by itself.
	ModeNone Mode = iota
	// ModeXDP: the integrated XDP mode. The agent runs in this process
	// on AF_XDP sockets behind an XDP fast path on Config.Iface.
	ModeXDP
	// ModeSplit: the split (DPU) mode. The agent is a separate process
	// in front of this host (`turboretry agent`, docs/split.md); the host
	// announces every connection ID it routes to the agent's control
	// address, Config.AgentControl.
	ModeSplit
)

var modeNames = [...]string{ModeNone: "none", ModeXDP: "xdp", ModeSplit: "split"}

// String returns the flag spelling of m.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode parses the --offload flag: "none", "xdp" or "split".
func ParseMode(s string) (Mode, error) {
	for m, n := range modeNames {
		if s == n {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("invalid offload mode %q: want none, xdp or split", s)
}

// DefaultIdleTimeout is the QUIC idle timeout assumed when
// Config.IdleTimeout is zero: that of turboretry serve.
const DefaultIdleTimeout = 30 * time.Second

// Config configures an offload.
type Config struct {
	// Mode is ModeNone (the zero value), ModeXDP or ModeSplit.
	Mode Mode
	// Iface is the interface the Transport's socket receives on; required
	// with ModeXDP.
	Iface string
	// StaleAfter is how old the agent's heartbeat may grow before the XDP
	// program fails open; 0 means the datapath's default.
	StaleAfter time.Duration
	// RotateEvery is the fast-path aging window T_W; 0 means
	// fastpath.DefaultWindow. A connection ID not seen for T_W may be
	// forgotten, so T_W below IdleTimeout could drop a connection that is
	// legitimately quiet: such a configuration is refused.
	RotateEvery time.Duration
	// IdleTimeout is the QUIC idle timeout the Transport's connections
	// use; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// AgentControl is the split-mode agent's control address, where the
	// host announces its connection IDs; required with ModeSplit.
	AgentControl netip.AddrPort
	// KeyRing holds the root secret the agent shares (the fast-path key
	// and the announcement key derive from it); required by Attach.
	KeyRing *token.KeyRing
	// PrefixRate limits the validated Initials per source prefix in the
	// agent and the XDP program (ModeXDP; datapath.Config.PrefixRate);
	// the zero value is off. In ModeSplit the agent process has its own.
	PrefixRate prefixrate.Config
	// Logger receives the offload's messages; nil discards them.
	Logger *slog.Logger
	// IDs is the layout of the Transports' connection IDs, which they
	// must issue (quic.Transport.ConnectionIDGenerator, as ListenWorkers
	// sets it). With a MAC, the fast path passes them on the MAC alone:
	// nothing is admitted or announced for them, only the IDs the MAC
	// cannot cover (a client's chosen DCID), and the agent's Retry SCIDs
	// are such IDs too. Nil: random IDs of the agent's default length,
	// every one through the cache (the paper's mode).
	IDs *quiclb.Codec
	// CacheOnly keeps the paper's mode with IDs set: the fast path ignores
	// the MAC and every ID goes through the Bloom cache (and, in ModeSplit,
	// the announcements).
	CacheOnly bool
	// Admitted, when set, sees every connection ID the Transport routes
	// and the outcome of handing it to the fast path (nil when admitted or
	// announced; in ModeXDP, an error while a restart has released the
	// datapath), on the goroutine that created the ID. It must not block.
	Admitted func(cid []byte, err error)
}

// Check reports whether c is a configuration Attach can run: the fields
// of the other modes unset, the mode's required fields set, and the
// aging window not below the idle timeout (fastpath.CheckWindow). Its
// messages name the turboretry serve flags.
func (c *Config) Check() error {
	switch c.Mode {
	case ModeNone:
		if c.Iface != "" {
			return fmt.Errorf("--iface %s needs --offload xdp", c.Iface)
		}
		if c.AgentControl.IsValid() {
			return fmt.Errorf("--agent-control %v needs --offload split", c.AgentControl)
		}
		return nil
	case ModeSplit:
		if !c.AgentControl.IsValid() {
			return errors.New("--offload split needs --agent-control: the agent's control address (host:port)")
		}
		if c.Iface != "" {
			return fmt.Errorf("--iface %s is for --offload xdp; in split mode the agent owns the interfaces", c.Iface)
		}
		return nil
	case ModeXDP:
		if c.AgentControl.IsValid() {
			return fmt.Errorf("--agent-control %v needs --offload split", c.AgentControl)
		}
	default:
		return fmt.Errorf("invalid offload mode %v", c.Mode)
	}
	if c.Iface == "" {
		return errors.New("--offload xdp needs --iface: the interface the server receives on")
	}
	if c.StaleAfter < 0 || c.RotateEvery < 0 || c.IdleTimeout < 0 {
		return errors.New("offload: negative StaleAfter, RotateEvery or IdleTimeout")
	}
	if err := fastpath.CheckWindow(c.window(), c.idleTimeout()); err != nil {
		return fmt.Errorf("offload: %w", err)
	}
	return nil
}

// window returns T_W with the default applied.
func (c *Config) window() time.Duration {
	if c.RotateEvery == 0 {
		return fastpath.DefaultWindow
	}
	return c.RotateEvery
}

func (c *Config) idleTimeout() time.Duration {
	if c.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return c.IdleTimeout
}
