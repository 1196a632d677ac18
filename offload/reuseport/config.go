package reuseport

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/turboretry/turboretry/quiclb"
)

// MaxWorkers bounds Config.Workers: the worker index is one octet of the
// connection ID.
const MaxWorkers = quiclb.MaxWorkers

// Mode is how a Group spreads datagrams over its sockets.
type Mode uint8

const (
	// ModeSteered: N sockets and the sk_reuseport program; a connection
	// stays on its worker whatever the client's address.
	ModeSteered Mode = iota
	// ModePlain: N sockets with the kernel's 4-tuple hash; a client that
	// migrates or rebinds lands on another worker, which does not know its
	// connection.
	ModePlain
	// ModeSingle: one socket, one worker.
	ModeSingle
)

var modeNames = [...]string{ModeSteered: "steered", ModePlain: "plain-reuseport", ModeSingle: "single-socket"}

// String returns the mode's name.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// Fallback is what Listen does when the steering program cannot be used.
type Fallback uint8

const (
	// FallbackSingle opens one socket: every connection on one worker,
	// migration safe. The default.
	FallbackSingle Fallback = iota
	// FallbackPlain keeps the N sockets with the kernel's 4-tuple hash:
	// all workers busy, but migrating connections are lost.
	FallbackPlain
	// FallbackNone makes Listen fail instead.
	FallbackNone
)

// Config configures a Group.
type Config struct {
	// Network is "udp", "udp4" or "udp6"; empty means "udp".
	Network string
	// Addr is the address to bind, host:port.
	Addr string
	// Workers is the number of sockets, 1..MaxWorkers; 0 means
	// runtime.NumCPU().
	Workers int
	// IDs is the layout of the server's connection IDs, whose worker
	// octet the program reads. Required. With a MAC the program verifies
	// it before trusting the worker index.
	IDs *quiclb.Codec
	// Fallback says what to do without the program.
	Fallback Fallback
	// Restartable loads the program and sets SO_REUSEPORT also for one
	// worker, so that a successor process can Join the group on a
	// restart (Group.Handover). Without the program a group cannot be
	// handed over.
	Restartable bool
	// Logger receives the mode line and fallbacks; nil discards.
	Logger *slog.Logger
}

// ErrConfig is wrapped by Listen for an invalid Config.
var ErrConfig = errors.New("reuseport: invalid config")

func (c Config) withDefaults() (Config, error) {
	if c.Network == "" {
		c.Network = "udp"
	}
	if c.Workers == 0 {
		c.Workers = min(runtime.NumCPU(), MaxWorkers)
	}
	switch {
	case c.Network != "udp" && c.Network != "udp4" && c.Network != "udp6":
		return c, fmt.Errorf("%w: network %q", ErrConfig, c.Network)
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return c, fmt.Errorf("%w: %d workers, want 1..%d", ErrConfig, c.Workers, MaxWorkers)
	case c.IDs == nil:
		return c, fmt.Errorf("%w: no connection ID layout (IDs)", ErrConfig)
	case c.Fallback > FallbackNone:
		return c, fmt.Errorf("%w: fallback %d", ErrConfig, c.Fallback)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
