//go:build !linux

package reuseport

import (
	"errors"
	"net"
	"sync"
)

// Group is, where no sk_reuseport program exists, one socket: one worker.
type Group struct {
	cfg    Config
	conns  []*net.UDPConn
	mode   Mode
	reason error
	steer  steering

	mu     sync.Mutex
	closed bool
}

// ErrPermission is not returned on this platform; it exists for errors.Is.
var ErrPermission = errors.New("reuseport: loading the steering program needs CAP_BPF (run as root)")

var errUnsupported = errors.New("reuseport: sk_reuseport steering needs Linux on a little-endian CPU")

// Listen opens one socket on cfg.Addr (FallbackNone with more than one
// worker fails): there is no steering program on this platform.
func Listen(cfg Config) (*Group, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Workers > 1 && cfg.Fallback == FallbackNone {
		return nil, errUnsupported
	}
	ua, err := net.ResolveUDPAddr(cfg.Network, cfg.Addr)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP(cfg.Network, ua)
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: cfg, conns: []*net.UDPConn{c}, mode: ModeSingle, steer: steering{ids: cfg.IDs, workers: 1}}
	if cfg.Workers > 1 {
		g.reason = errUnsupported
		cfg.Logger.Warn("reuseport: no steering program here; one socket, one worker (migration across workers is not steered, so it is not spread)",
			"addr", c.LocalAddr().String(), "reason", errUnsupported)
	}
	return g, nil
}

// Attach fails: there is no program.
func (g *Group) Attach() error { return errUnsupported }

// Detach does nothing.
func (g *Group) Detach() error { return nil }

// Attached is false.
func (g *Group) Attached() bool { return false }

// Stats is zero.
func (g *Group) Stats() (Stats, error) { return Stats{}, nil }

// Close closes the socket.
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return g.conns[0].Close()
}

// Probe reports that this platform cannot steer.
func Probe() error { return errUnsupported }
