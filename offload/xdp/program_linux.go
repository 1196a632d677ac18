package xdp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/fastpath"
)

// Program is the loaded XDP fast path: its maps, the shared cache over
// them, and at most one attachment. Its methods are safe for concurrent
// use.
type Program struct {
	cfg   Config
	objs  fastpathObjects
	cache *fastpath.Cache

	// The mmapped map memory behind cache; unmapped by Close.
	tablesMem []byte
	genMem    []byte

	mu     sync.Mutex
	link   link.Link
	closed bool

	prefixWriteErrors atomic.Uint64
	testClock         atomic.Uint64 // setClockForTest; 0: none
}

// Load validates cfg, loads the program and its maps into the kernel,
// writes the configuration and maps the cache tables into the process.
// Nothing is attached yet and the heartbeat is unset, so until the agent
// calls Beat an attached program passes everything.
//
// The error wraps the kernel's: errors.Is(err, unix.EPERM) without the
// privileges, ebpf.ErrNotSupported on too old a kernel; a verifier
// rejection carries the verifier log (print it with %+v).
func Load(cfg Config) (*Program, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Only kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("xdp: lifting the memlock limit: %w", err)
	}
	spec, err := loadFastpath()
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	spec.Maps[fastpathMapTrXsks].MaxEntries = uint32(cfg.Queues)
	// An LRU hash preallocates its entries: one when the limit is off.
	spec.Maps[fastpathMapTrPrefixes].MaxEntries = 1
	spec.Maps[fastpathMapTrAttempts].MaxEntries = 1
	if cfg.PrefixRate.Enabled() {
		spec.Maps[fastpathMapTrPrefixes].MaxEntries = uint32(cfg.PrefixRate.MaxPrefixes)
		spec.Maps[fastpathMapTrAttempts].MaxEntries = uint32(cfg.PrefixRate.MaxAttempts)
	}

	p := &Program{cfg: cfg}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		return nil, fmt.Errorf("xdp: loading the program: %w", err)
	}
	if err := p.init(); err != nil {
		p.release()
		return nil, err
	}
	return p, nil
}

// init writes the configuration and shares the cache tables.
func (p *Program) init() error {
	if err := p.objs.TrConfig.Update(uint32(0), p.cfg.mapConfig(), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("xdp: writing the configuration: %w", err)
	}
	var err error
	p.tablesMem, err = mmapMap(p.objs.FpTables, 2*fastpath.TableBytes)
	if err != nil {
		return err
	}
	p.genMem, err = mmapMap(p.objs.FpGen, os.Getpagesize())
	if err != nil {
		return err
	}
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&p.tablesMem[0])), 2*fastpath.TableWords)
	gen := (*uint64)(unsafe.Pointer(&p.genMem[0]))
	p.cache, err = fastpath.NewShared(p.cfg.Key, p.cfg.CIDLen,
		[2][]uint64{words[:fastpath.TableWords:fastpath.TableWords], words[fastpath.TableWords:]}, gen)
	if err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	return nil
}

// mmapMap maps size bytes of an mmapable array map read-write. The map
// memory is page-aligned, so the uint64 words in it are aligned for atomics.
func mmapMap(m *ebpf.Map, size int) ([]byte, error) {
	b, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("xdp: mmap of map %s (%d bytes): %w", m, size, err)
	}
	return b, nil
}

// Cache returns the connection cache over the program's own tables: what
// the agent inserts there, the program sees at once. The agent must run its
// rotation (Cache.RunRotation) on it. Do not use it after Close.
func (p *Program) Cache() *fastpath.Cache { return p.cache }

// Config returns the configuration in effect, defaults filled in.
func (p *Program) Config() Config { return p.cfg }

// XSKMap returns the map of AF_XDP sockets by receive queue, for the agent
// to register its sockets in.
func (p *Program) XSKMap() *ebpf.Map { return p.objs.TrXsks }

// AttachMode selects how the program is attached to an interface.
type AttachMode int

// Attach modes.
const (
	// ModeAuto lets the kernel choose: native when the driver supports it,
	// else generic.
	ModeAuto AttachMode = iota
	// ModeGeneric runs after the kernel built an skb (works everywhere, slow).
	ModeGeneric
	// ModeDriver runs in the driver; fails when the driver lacks XDP.
	ModeDriver
)

// String returns the mode's name.
func (m AttachMode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeGeneric:
		return "generic"
	case ModeDriver:
		return "driver"
	}
	return fmt.Sprintf("AttachMode(%d)", int(m))
}

var errAttached = errors.New("xdp: program already attached")

var errClosed = errors.New("xdp: program closed")

// Attach attaches the program to the named interface through an unpinned
// BPF link: the kernel detaches it when Close runs or when the process
// exits, however it exits.
func (p *Program) Attach(iface string, mode AttachMode) error {
	var flags link.XDPAttachFlags
	switch mode {
	case ModeAuto:
	case ModeGeneric:
		flags = link.XDPGenericMode
	case ModeDriver:
		flags = link.XDPDriverMode
	default:
		return fmt.Errorf("xdp: unknown attach mode %d", int(mode))
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("xdp: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	if p.link != nil {
		return errAttached
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: p.objs.TrFastpath, Interface: ifi.Index, Flags: flags})
	if err != nil {
		return fmt.Errorf("xdp: attaching to %s (%s mode): %w", iface, mode, err)
	}
	p.link = l
	return nil
}

// Detach removes the program from its interface; it is a no-op when the
// program is not attached.
func (p *Program) Detach() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.detachLocked()
}

func (p *Program) detachLocked() error {
	if p.link == nil {
		return nil
	}
	err := p.link.Close()
	p.link = nil
	if err != nil {
		return fmt.Errorf("xdp: detaching: %w", err)
	}
	return nil
}

// Close detaches the program, unmaps the cache memory and releases the
// maps and the program. The Cache must not be used afterwards.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.detachLocked()
	return errors.Join(err, p.release())
}

// release unmaps the shared memory and closes the kernel objects.
func (p *Program) release() error {
	var errs []error
	p.cache = nil
	for _, b := range []*[]byte{&p.tablesMem, &p.genMem} {
		if *b != nil {
			if err := unix.Munmap(*b); err != nil {
				errs = append(errs, fmt.Errorf("xdp: munmap: %w", err))
			}
			*b = nil
		}
	}
	if err := p.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("xdp: closing maps: %w", err))
	}
	return errors.Join(errs...)
}
