package split

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// DefaultIdleTimeout is the host idle timeout assumed when
// Config.IdleTimeout is zero: that of turboretry serve.
const DefaultIdleTimeout = 30 * time.Second

// DefaultRotateEvery is T_W when Config.RotateEvery is zero.
const DefaultRotateEvery = fastpath.DefaultWindow

// Config configures an Agent.
type Config struct {
	// WireIface is the port clients reach the host through (p0); the XDP
	// program attaches here. Required.
	WireIface string
	// HostIface is the port towards the host (pf0hpf); validated Initials
	// leave through it. Required, and not WireIface.
	HostIface string
	// Port is the server's UDP port. Required.
	Port uint16
	// KeyRing holds the root secret the host validates tokens with; the
	// control channel's key derives from it too. Required.
	KeyRing *token.KeyRing
	// CIDLen is the host's connection ID length; 0 means IDs.Len() with
	// IDs, else agent.DefaultCIDLen.
	CIDLen int
	// IDs is the layout of the host's connection IDs (turboretry serve
	// --cid-*). With a MAC, its IDs pass the fast path on the MAC and the
	// host announces only the rest; the Retry SCIDs are such IDs, spread
	// over IDWorkers workers. Nil: the cache alone, random Retry SCIDs.
	IDs *quiclb.Codec
	// IDWorkers is the number of the host's workers; 0 means 1.
	IDWorkers int
	// CacheOnly keeps every ID in the cache (the paper's mode; the host's
	// --fastpath bloom) even with IDs carrying a MAC.
	CacheOnly bool
	// Control is the UDP address the control listener binds (reachable
	// from the host). Required.
	Control netip.AddrPort
	// StaleAfter is how old the heartbeat may grow before the program
	// fails open; 0 means the datapath's default.
	StaleAfter time.Duration
	// RotateEvery is the fast-path aging window T_W; 0 means
	// DefaultRotateEvery. It must not be below IdleTimeout.
	RotateEvery time.Duration
	// IdleTimeout is the host's QUIC idle timeout, which the agent cannot
	// see; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// PrefixRate limits the validated Initials per source prefix in the
	// agent and the XDP program on WireIface (datapath.Config.PrefixRate);
	// the zero value is off.
	PrefixRate prefixrate.Config
	// Logger receives start, stop and failure messages; nil discards them.
	Logger *slog.Logger
}

// Errors of Start besides the datapath's (datapath.ErrPermission and the
// others, which Start wraps unchanged); match them with errors.Is.
var (
	// ErrConfig: the Config is invalid.
	ErrConfig = errors.New("split: invalid config")
	// ErrHostPort: the AF_XDP socket on the host port could not be opened.
	ErrHostPort = errors.New("split: host port")
	// ErrControl: the control socket could not be bound.
	ErrControl = errors.New("split: control socket")
	// ErrUnsupported: the agent does not run on this platform.
	ErrUnsupported = errors.New("split: the agent needs Linux with AF_XDP")
)

// withDefaults checks c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.WireIface == "":
		return c, fmt.Errorf("%w: no wire interface", ErrConfig)
	case c.HostIface == "":
		return c, fmt.Errorf("%w: no host interface", ErrConfig)
	case c.WireIface == c.HostIface:
		return c, fmt.Errorf("%w: wire and host interface are both %s", ErrConfig, c.WireIface)
	case c.Port == 0:
		return c, fmt.Errorf("%w: no port", ErrConfig)
	case c.KeyRing == nil:
		return c, fmt.Errorf("%w: no key ring", ErrConfig)
	case !c.Control.IsValid() || c.Control.Port() == 0:
		return c, fmt.Errorf("%w: control address %v needs an IP and a port", ErrConfig, c.Control)
	case c.CIDLen < 0 || c.CIDLen > fastpath.MaxCIDLen:
		return c, fmt.Errorf("%w: connection ID length %d (want 1..%d)", ErrConfig, c.CIDLen, fastpath.MaxCIDLen)
	case c.StaleAfter < 0 || c.RotateEvery < 0 || c.IdleTimeout < 0:
		return c, fmt.Errorf("%w: negative StaleAfter, RotateEvery or IdleTimeout", ErrConfig)
	}
	if c.CIDLen == 0 {
		c.CIDLen = agent.DefaultCIDLen
		if c.IDs != nil {
			c.CIDLen = c.IDs.Len()
		}
	}
	if c.IDs != nil && c.IDs.Len() != c.CIDLen {
		return c, fmt.Errorf("%w: connection IDs of %d bytes, but CIDLen %d", ErrConfig, c.IDs.Len(), c.CIDLen)
	}
	if c.RotateEvery == 0 {
		c.RotateEvery = DefaultRotateEvery
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if err := fastpath.CheckWindow(c.RotateEvery, c.IdleTimeout); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
