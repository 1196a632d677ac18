//go:build !linux

package reuseport

import (
	"errors"
	"net"
	"os"
	"sync"

	"github.com/turboretry/turboretry/quiclb"
)

// Group is, where no sk_reuseport program exists, one socket: one worker.
type Group struct {
	cfg        Config
	conns      []*net.UDPConn
	mode       Mode
	reason     error
	steer      steering
	generation int

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
	g := &Group{cfg: cfg, conns: []*net.UDPConn{c}, mode: ModeSingle, steer: steering{ids: cfg.IDs, workers: [2]int{1, 0}}}
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

// Inheritance is what a steered Group hands to its successor process; no
// group is steered on this platform.
type Inheritance struct {
	Generation, Workers int
	HashKey             [2]uint64
	Files               []*os.File
}

// InheritedFiles is the number of files an Inheritance carries.
const InheritedFiles = 5

// ErrNotHandedOver is wrapped by Handover: there is no program here.
var ErrNotHandedOver = errors.New("reuseport: no steering program, so no handover")

// ErrGenerationBusy exists for errors.Is.
var ErrGenerationBusy = errors.New("reuseport: the generation a restart would take still has sockets (the process before the previous restart is still draining)")

// MACKey fails: there is no program.
func (inh *Inheritance) MACKey() (quiclb.Key, bool, error) {
	return quiclb.Key{}, false, errUnsupported
}

// Handover fails: there is no program.
func (g *Group) Handover() (*Inheritance, error) { return nil, ErrNotHandedOver }

// Join fails: there is no program.
func Join(Config, *Inheritance) (*Group, error) { return nil, errUnsupported }

// Activate fails: there is no program.
func (g *Group) Activate() error { return ErrNotHandedOver }

// CurrentGeneration is always 0.
func (g *Group) CurrentGeneration() (int, error) { return 0, nil }

// Probe reports that this platform cannot steer.
func Probe() error { return errUnsupported }
