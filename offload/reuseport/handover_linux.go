package reuseport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/quiclb"
)

// Inheritance is what a steered Group hands to the process that takes over
// from it on a restart: the program and its maps, as files to pass to that
// process, and what Join needs to know of the generation handing over.
// The UDP sockets are not handed over: they keep serving the connections
// of the process that drains.
type Inheritance struct {
	// Generation and Workers are those of the group handing over.
	Generation, Workers int
	// HashKey is the SipHash key of client-chosen DCIDs (k0, k1), for
	// the Go twin of the program (Group.WorkerFor).
	HashKey [2]uint64
	// Files are the program, then its configuration, generation, socket
	// and counter maps, in that order (InheritedFiles of them).
	Files []*os.File
}

// InheritedFiles is the number of files an Inheritance carries.
const InheritedFiles = 5

// ErrNotHandedOver is wrapped by Handover when the group cannot be handed
// over: it runs without the steering program.
var ErrNotHandedOver = errors.New("reuseport: no steering program, so no handover")

// ErrGenerationBusy is wrapped by Join when the generation it would take
// still has sockets: the process before the previous restart is still
// draining, and its connections would be steered to the new one.
var ErrGenerationBusy = errors.New("reuseport: the generation a restart would take still has sockets (the process before the previous restart is still draining)")

// Handover returns what a successor process needs to Join the group:
// duplicates of the program's and maps' descriptors, which the caller
// passes on (os/exec's ExtraFiles) and closes.
func (g *Group) Handover() (*Inheritance, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objs == nil || g.closed {
		return nil, fmt.Errorf("%w (mode %v: %v)", ErrNotHandedOver, g.mode, g.reason)
	}
	inh := &Inheritance{Generation: g.generation, Workers: len(g.conns), HashKey: [2]uint64{g.steer.k0, g.steer.k1}}
	for _, fd := range []int{g.objs.TrSteer.FD(), g.objs.TrRpCfg.FD(), g.objs.TrRpGen.FD(), g.objs.TrRpSocks.FD(), g.objs.TrRpCounters.FD()} {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			for _, f := range inh.Files {
				_ = f.Close()
			}
			return nil, fmt.Errorf("reuseport: duplicating a descriptor for the handover: %w", err)
		}
		inh.Files = append(inh.Files, os.NewFile(uintptr(dup), "turboretry-steering"))
	}
	return inh, nil
}

// Join opens cfg.Workers sockets on cfg.Addr (the address of the group
// handing over) in the other generation, registers them with the inherited
// program, and returns the group; it does not take new connections until
// Activate. It takes ownership of inh.Files. cfg.IDs must be the layout the
// program was configured with (same --cid-* flags and root secret): a
// restart cannot change it.
func Join(cfg Config, inh *Inheritance) (_ *Group, err error) {
	defer func() {
		for _, f := range inh.Files {
			_ = f.Close()
		}
	}()
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(inh.Files) != InheritedFiles || inh.Generation < 0 || inh.Generation >= quiclb.Generations {
		return nil, fmt.Errorf("%w: inheritance of %d files, generation %d", ErrConfig, len(inh.Files), inh.Generation)
	}
	objs, err := adopt(inh.Files)
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: cfg, mode: ModeSteered, generation: 1 - inh.Generation, objs: objs, attached: true}
	g.steer = steering{ids: cfg.IDs, k0: inh.HashKey[0], k1: inh.HashKey[1], current: g.generation}
	defer func() {
		if err != nil {
			_ = g.Close()
		}
	}()
	var c steerTrRpConfig
	if err := objs.TrRpCfg.Lookup(uint32(0), &c); err != nil {
		return nil, fmt.Errorf("reuseport: reading the inherited configuration: %w", err)
	}
	if err := sameLayout(&c, cfg.IDs); err != nil {
		return nil, err
	}
	var cookie uint64
	if err := objs.TrRpSocks.Lookup(uint32(slot(g.generation, 0)), &cookie); err == nil {
		return nil, ErrGenerationBusy
	}
	if err := g.open(cfg.Workers, true); err != nil {
		return nil, err
	}
	if err := g.register(objs); err != nil {
		return nil, err
	}
	c.Workers[g.generation] = uint32(len(g.conns))
	if err := objs.TrRpCfg.Update(uint32(0), &c, ebpf.UpdateExist); err != nil {
		return nil, classify("writing the configuration", err)
	}
	g.steer.workers[inh.Generation] = int(c.Workers[inh.Generation])
	g.steer.workers[g.generation] = len(g.conns)
	cfg.Logger.Info("reuseport: joined the steered group of the previous process", "addr", g.LocalAddr().String(),
		"workers", len(g.conns), "generation", g.generation)
	return g, nil
}

// adopt makes the program and maps of inherited descriptors (duplicated:
// the files stay the caller's to close).
func adopt(files []*os.File) (*steerObjects, error) {
	fds := make([]int, len(files))
	for i, f := range files {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			for _, d := range fds[:i] {
				_ = unix.Close(d)
			}
			return nil, fmt.Errorf("reuseport: inherited descriptor %d: %w", i, err)
		}
		fds[i] = fd
	}
	objs := new(steerObjects)
	var err error
	closeRest := func(from int) {
		for _, d := range fds[from:] {
			_ = unix.Close(d)
		}
	}
	if objs.TrSteer, err = ebpf.NewProgramFromFD(fds[0]); err != nil {
		closeRest(0)
		return nil, fmt.Errorf("reuseport: inherited program: %w", err)
	}
	maps := []**ebpf.Map{&objs.TrRpCfg, &objs.TrRpGen, &objs.TrRpSocks, &objs.TrRpCounters}
	for i, m := range maps {
		if *m, err = ebpf.NewMapFromFD(fds[1+i]); err != nil {
			closeRest(2 + i)
			_ = objs.TrSteer.Close()
			for _, done := range maps[:i] {
				_ = (*done).Close()
			}
			return nil, fmt.Errorf("reuseport: inherited map %d: %w", i, err)
		}
	}
	// The maps must be the ones this binary's program has: a successor
	// built with another layout refuses rather than misreads them.
	want := []struct {
		m         *ebpf.Map
		typ       ebpf.MapType
		valueSize uint32
	}{
		{objs.TrRpCfg, ebpf.Array, uint32(binary.Size(steerTrRpConfig{}))},
		{objs.TrRpGen, ebpf.Array, 4},
		{objs.TrRpSocks, ebpf.ReusePortSockArray, 0},
		{objs.TrRpCounters, ebpf.PerCPUArray, 8},
	}
	for i, w := range want {
		if w.m.Type() != w.typ || (w.valueSize != 0 && w.m.ValueSize() != w.valueSize) {
			_ = objs.Close()
			return nil, fmt.Errorf("%w: inherited map %d is a %v of %d-byte values, want a %v of %d: the previous binary's steering program differs; restart by stop and start",
				ErrConfig, i, w.m.Type(), w.m.ValueSize(), w.typ, w.valueSize)
		}
	}
	if objs.TrRpSocks.MaxEntries() < uint32(slot(1, MaxWorkers-1)+1) {
		_ = objs.Close()
		return nil, fmt.Errorf("%w: the inherited socket map has %d slots, fewer than two generations need", ErrConfig, objs.TrRpSocks.MaxEntries())
	}
	return objs, nil
}

// sameLayout checks that the program verifies ids' connection IDs.
func sameLayout(c *steerTrRpConfig, ids *quiclb.Codec) error {
	var k0, k1 uint64
	mac := uint32(0)
	if k, ok := ids.MACKey(); ok {
		k0, k1, mac = binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:]), 1
	}
	if c.Cid.Len != uint32(ids.Len()) || c.Cid.ConfigId != uint32(ids.ConfigID()) || c.Cid.WorkerOff != uint32(ids.WorkerOffset()) ||
		c.CheckMac != mac || c.Cid.Key.K0 != k0 || c.Cid.Key.K1 != k1 {
		return fmt.Errorf("%w: the connection-ID layout or its MAC key (the root secret) differs from the running process's; a restart keeps them (change them by stop and start)", ErrConfig)
	}
	return nil
}

// Activate makes the group's generation the one that takes new
// connections: from now on the program hashes new clients' Initials over
// this group's sockets, while the other generation keeps the packets of
// its connections. The process handing over calls it again to take new
// connections back when its successor failed.
func (g *Group) Activate() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objs == nil || g.closed {
		return fmt.Errorf("%w (mode %v)", ErrNotHandedOver, g.mode)
	}
	if err := g.objs.TrRpGen.Update(uint32(0), uint32(g.generation), ebpf.UpdateExist); err != nil {
		return fmt.Errorf("reuseport: switching the generation: %w", err)
	}
	return nil
}

// CurrentGeneration returns the generation that takes new connections, as
// the program's map says (another process may have switched it).
func (g *Group) CurrentGeneration() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objs == nil || g.closed {
		return g.generation, nil
	}
	var gen uint32
	if err := g.objs.TrRpGen.Lookup(uint32(0), &gen); err != nil {
		return 0, fmt.Errorf("reuseport: reading the generation: %w", err)
	}
	return int(gen), nil
}

// MACKey returns the connection-ID MAC key the inherited program verifies
// (ok false when its IDs carry no MAC). A successor makes its IDs with it:
// the key comes from the root secret when the first process started, and
// a secret reloaded since (SIGHUP) must not make the successor's IDs
// unverifiable, so the key changes only with a stop and start.
func (inh *Inheritance) MACKey() (key quiclb.Key, ok bool, err error) {
	if len(inh.Files) != InheritedFiles {
		return key, false, fmt.Errorf("%w: inheritance of %d files", ErrConfig, len(inh.Files))
	}
	fd, err := unix.FcntlInt(inh.Files[1].Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return key, false, fmt.Errorf("reuseport: inherited configuration: %w", err)
	}
	m, err := ebpf.NewMapFromFD(fd)
	if err != nil {
		_ = unix.Close(fd)
		return key, false, fmt.Errorf("reuseport: inherited configuration: %w", err)
	}
	defer m.Close()
	if m.Type() != ebpf.Array || m.ValueSize() != uint32(binary.Size(steerTrRpConfig{})) {
		return key, false, fmt.Errorf("%w: the inherited configuration map differs from this binary's", ErrConfig)
	}
	var c steerTrRpConfig
	if err := m.Lookup(uint32(0), &c); err != nil {
		return key, false, fmt.Errorf("reuseport: reading the inherited configuration: %w", err)
	}
	binary.LittleEndian.PutUint64(key[:8], c.Cid.Key.K0)
	binary.LittleEndian.PutUint64(key[8:], c.Cid.Key.K1)
	return key, c.CheckMac == 1, nil
}
