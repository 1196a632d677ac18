package reuseport

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Group is a set of SO_REUSEPORT sockets on one address, one per worker,
// with the steering program attached (ModeSteered) or in a fallback mode.
// Its methods are safe for concurrent use.
type Group struct {
	cfg        Config
	conns      []*net.UDPConn
	mode       Mode
	reason     error
	steer      steering
	generation int

	mu       sync.Mutex
	objs     *steerObjects // nil in the fallback modes
	attached bool
	closed   bool
}

// ErrPermission is wrapped by the fallback reason (and by Listen's error
// with FallbackNone) when the kernel refused the program for lack of
// privilege (CAP_BPF, or root).
var ErrPermission = errors.New("reuseport: loading the steering program needs CAP_BPF (run as root)")

// Listen opens cfg.Workers sockets on cfg.Addr and steers them (see the
// package documentation). Without the program it falls back as
// cfg.Fallback says and logs one line saying that migrating connections
// are then not steered.
func Listen(cfg Config) (*Group, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: cfg, steer: steering{ids: cfg.IDs}}
	defer func() { g.steer.workers[0] = len(g.conns) }()
	var key [16]byte
	_, _ = rand.Read(key[:])
	g.steer.k0, g.steer.k1 = binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])

	if cfg.Workers > 1 || cfg.Restartable {
		if err := g.open(cfg.Workers, true); err != nil {
			return nil, err
		}
		err := g.loadAndAttach()
		if err == nil {
			g.mode = ModeSteered
			cfg.Logger.Info("reuseport: steering by connection ID", "addr", g.LocalAddr().String(), "workers", cfg.Workers)
			return g, nil
		}
		g.closeConns()
		if cfg.Fallback == FallbackNone {
			return nil, err
		}
		g.reason = err
	}
	switch {
	case cfg.Workers > 1 && cfg.Fallback == FallbackPlain:
		g.mode = ModePlain
		if err := g.open(cfg.Workers, true); err != nil {
			return nil, err
		}
		cfg.Logger.Warn("reuseport: no steering program; plain SO_REUSEPORT by 4-tuple hash: migration across workers is not steered, a migrating or rebinding client may lose its connection",
			"addr", g.LocalAddr().String(), "workers", cfg.Workers, "reason", g.reason)
	default:
		g.mode = ModeSingle
		if err := g.open(1, false); err != nil {
			return nil, err
		}
		if cfg.Workers > 1 {
			cfg.Logger.Warn("reuseport: no steering program; one socket, one worker instead of "+fmt.Sprint(cfg.Workers)+
				" (migration across workers is not steered, so it is not spread)", "addr", g.LocalAddr().String(), "reason", g.reason)
		}
	}
	return g, nil
}

// open binds n sockets on the configured address, the later ones on the
// port the first one got, with SO_REUSEPORT when shared (a single socket
// without the program gets none: nothing may join it).
func (g *Group) open(n int, shared bool) error {
	var lc net.ListenConfig
	if shared {
		lc.Control = reusePort
	}
	addr := g.cfg.Addr
	for i := range n {
		pc, err := lc.ListenPacket(context.Background(), g.cfg.Network, addr)
		if err != nil {
			g.closeConns()
			return fmt.Errorf("reuseport: socket %d on %s: %w", i, addr, err)
		}
		c := pc.(*net.UDPConn)
		g.conns = append(g.conns, c)
		addr = c.LocalAddr().String()
	}
	return nil
}

// reusePort sets SO_REUSEPORT before the socket binds.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

func (g *Group) closeConns() {
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
}

// loadAndAttach loads the program, writes its configuration, registers the
// sockets and attaches it to the group.
func (g *Group) loadAndAttach() error {
	// Only kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		return classify("lifting the memlock limit", err)
	}
	spec, err := loadSteer()
	if err != nil {
		return fmt.Errorf("reuseport: %w", err)
	}
	objs := new(steerObjects)
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return classify("loading the steering program", err)
	}
	if err := g.configure(objs); err != nil {
		_ = objs.Close()
		return err
	}
	g.objs = objs
	if err := g.Attach(); err != nil {
		g.objs = nil
		_ = objs.Close()
		return err
	}
	return nil
}

func (g *Group) configure(objs *steerObjects) error {
	var c steerTrRpConfig
	c.HashKey.K0, c.HashKey.K1 = g.steer.k0, g.steer.k1
	ids := g.cfg.IDs
	c.Cid.Len = uint32(ids.Len())
	c.Cid.ConfigId = uint32(ids.ConfigID())
	c.Cid.WorkerOff = uint32(ids.WorkerOffset())
	if k, ok := ids.MACKey(); ok {
		c.Cid.Key.K0 = binary.LittleEndian.Uint64(k[:8])
		c.Cid.Key.K1 = binary.LittleEndian.Uint64(k[8:])
		c.CheckMac = 1
	}
	c.Workers[g.generation] = uint32(len(g.conns))
	if err := objs.TrRpCfg.Update(uint32(0), &c, ebpf.UpdateAny); err != nil {
		return classify("writing the configuration", err)
	}
	if err := objs.TrRpGen.Update(uint32(0), uint32(g.generation), ebpf.UpdateAny); err != nil {
		return classify("writing the generation", err)
	}
	return g.register(objs)
}

// register puts the group's sockets into the program's socket map, at
// their generation's slots.
func (g *Group) register(objs *steerObjects) error {
	for i, conn := range g.conns {
		fd, err := socketFD(conn)
		if err != nil {
			return err
		}
		if err := objs.TrRpSocks.Update(uint32(slot(g.generation, i)), uint64(fd), ebpf.UpdateAny); err != nil {
			return classify(fmt.Sprintf("registering socket %d", i), err)
		}
	}
	return nil
}

// Attach (re)attaches the steering program to the group; Listen attached
// it already. Attaching twice is a no-op.
func (g *Group) Attach() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objs == nil || g.closed {
		return fmt.Errorf("reuseport: no steering program (mode %v)", g.mode)
	}
	if g.attached {
		return nil
	}
	if err := g.setsockopt(unix.SO_ATTACH_REUSEPORT_EBPF, g.objs.TrSteer.FD()); err != nil {
		return classify("attaching the steering program (SO_ATTACH_REUSEPORT_EBPF)", err)
	}
	g.attached = true
	return nil
}

// Detach removes the program from the group: the kernel's 4-tuple hash
// picks the sockets from then on (tests show what steering buys with it).
// Detaching twice is a no-op.
func (g *Group) Detach() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.attached || g.closed {
		return nil
	}
	if err := g.setsockopt(unix.SO_DETACH_REUSEPORT_BPF, 0); err != nil {
		return fmt.Errorf("reuseport: detaching the steering program: %w", err)
	}
	g.attached = false
	return nil
}

// Attached reports whether the program is attached.
func (g *Group) Attached() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.attached
}

// setsockopt sets an integer option on the first socket: reuseport
// programs belong to the group, any member can set them.
func (g *Group) setsockopt(opt, value int) error {
	rc, err := g.conns[0].SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, value) }); err != nil {
		return err
	}
	return serr
}

func socketFD(c *net.UDPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// classify wraps err of step what, adding ErrPermission when the kernel
// refused for lack of privilege.
func classify(what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %s: %w", ErrPermission, what, err)
	}
	return fmt.Errorf("reuseport: %s: %w", what, err)
}

// Stats returns the program's counters; zero in the fallback modes.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var s Stats
	if g.objs == nil || g.closed {
		return s, nil
	}
	var c [numReasons]uint64
	var perCPU []uint64
	for r := range numReasons {
		if err := g.objs.TrRpCounters.Lookup(uint32(r), &perCPU); err != nil {
			return s, fmt.Errorf("reuseport: reading counter %d: %w", r, err)
		}
		for _, n := range perCPU {
			c[r] += n
		}
	}
	return Stats{Steered: c[Steered], Hashed: c[Hashed], Undecodable: c[Undecodable], Truncated: c[Truncated], NoSocket: c[NoSocket]}, nil
}

// Close closes the sockets and releases the program.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	objs := g.objs
	g.objs = nil
	g.mu.Unlock()
	var errs []error
	for _, c := range g.conns {
		errs = append(errs, c.Close())
	}
	if objs != nil {
		errs = append(errs, objs.Close())
	}
	return errors.Join(errs...)
}

// Probe loads the steering program and releases it at once: nil when this
// process may steer (what `turboretry doctor` checks), an error wrapping
// ErrPermission without CAP_BPF.
func Probe() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return classify("lifting the memlock limit", err)
	}
	spec, err := loadSteer()
	if err != nil {
		return fmt.Errorf("reuseport: %w", err)
	}
	var objs steerObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return classify("loading the steering program", err)
	}
	return objs.Close()
}
