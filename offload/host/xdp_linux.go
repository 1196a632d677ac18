package host

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// xdpPart is the integrated XDP datapath. A restart releases it (the
// successor takes the interface over) and, should the successor fail,
// starts it again: dp is nil in between.
type xdpPart struct {
	trs   []*quic.Transport
	steer func([]byte) int
	cfg   *Config
	port  uint16

	// mu guards dp: the admit hook reads it on every new connection ID
	// (a read lock, no allocation); release and reacquire replace it.
	mu      sync.RWMutex
	dp      *datapath.Datapath
	pausing bool // Pause was called while released: start paused
}

// attachXDP starts the integrated XDP datapath on cfg.Iface for port in
// front of the Transports: validated Initials go straight into the one
// steer picks, and every connection ID they route is admitted to the fast
// path (nothing for one that verifies on its MAC). It runs in the
// caller's network namespace (that of cfg.Iface).
func attachXDP(trs []*quic.Transport, steer func([]byte) int, cfg *Config, port uint16) (agentPart, error) {
	p := &xdpPart{trs: trs, steer: steer, cfg: cfg, port: port}
	dp, err := p.startRetrying()
	if err != nil {
		return nil, err
	}
	p.dp = dp
	admitted := cfg.Admitted
	log := cfg.Logger
	// The fast path keys on the server's connection IDs: ours must have
	// the length it was built for.
	setHooks(trs, cfg, func(cid []byte) {
		p.mu.RLock()
		err := errReleased
		if p.dp != nil {
			// A client-chosen Initial DCID of another length is
			// refused; it only ever appears in long headers, which
			// reach the agent anyway.
			err = p.dp.Admit(cid)
			if err != nil && !errors.Is(err, fastpath.ErrCIDLength) {
				log.Warn("offload: admitting a connection ID to the fast path", "err", err)
			}
		}
		p.mu.RUnlock()
		if admitted != nil {
			admitted(cid, err)
		}
	})
	return p, nil
}

// errReleased is what the admit hook reports while the datapath is
// released: there is no fast path to admit to.
var errReleased = errors.New("offload: the XDP datapath is released (restart)")

// takeoverWait bounds how long a start waits for the interface's XDP
// program slot and receive queues to come free: a predecessor that has
// just released them (restart), or a failed successor being reaped.
const takeoverWait = 3 * time.Second

// startRetrying starts the datapath, retrying while the kernel says the
// interface or a queue is busy (EBUSY), for at most takeoverWait.
func (p *xdpPart) startRetrying() (*datapath.Datapath, error) {
	deadline := time.Now().Add(takeoverWait)
	for {
		dp, err := p.start()
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return dp, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *xdpPart) start() (*datapath.Datapath, error) {
	cfg, trs, steer := p.cfg, p.trs, p.steer
	log := cfg.Logger
	return datapath.Start(datapath.Config{
		Iface:       cfg.Iface,
		Port:        p.port,
		KeyRing:     cfg.KeyRing,
		CIDLen:      cfg.cidLen(),
		IDs:         cfg.IDs, // the agent's Retry SCIDs: the server's layout
		IDWorkers:   len(trs),
		CacheOnly:   cfg.CacheOnly,
		StaleAfter:  cfg.StaleAfter,
		RotateEvery: cfg.window(),
		PrefixRate:  cfg.PrefixRate,
		Deliver: func(pkt []byte, from, _ netip.AddrPort) {
			tr := trs[0]
			if steer != nil {
				tr = trs[steer(pkt)]
			}
			// InjectDatagram copies pkt, as Deliver requires.
			if err := tr.InjectDatagram(pkt, from); err != nil {
				log.Debug("offload: delivering a validated Initial", "from", from.String(), "err", err)
			}
		},
		Logger: log,
	})
}

// release closes the datapath: the program detaches (the kernel stack and
// the Transports' own address validation see every packet) and the AF_XDP
// sockets free their queues for a successor.
func (p *xdpPart) release() error {
	if p.cfg.CacheOnly {
		// The connections' IDs live in this program's cache only: a
		// successor's program would drop their packets.
		return ErrReleaseBloomOnly
	}
	p.mu.Lock()
	dp := p.dp
	p.dp = nil
	if dp != nil {
		p.pausing = dp.Paused()
	}
	p.mu.Unlock()
	if dp == nil {
		return nil
	}
	return dp.Close()
}

// reacquire starts the datapath again after release (the successor
// failed and has been reaped).
func (p *xdpPart) reacquire() error {
	p.mu.RLock()
	running := p.dp != nil
	p.mu.RUnlock()
	if running {
		return nil
	}
	dp, err := p.startRetrying()
	if err != nil {
		return fmt.Errorf("offload xdp on %s: %w", p.cfg.Iface, err)
	}
	p.mu.Lock()
	p.dp = dp
	if p.pausing {
		dp.Pause()
	}
	p.mu.Unlock()
	return nil
}

// running returns the datapath, or nil while released.
func (p *xdpPart) running() *datapath.Datapath {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.dp
}

func (p *xdpPart) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pausing = true
	if p.dp != nil {
		p.dp.Pause()
	}
}

func (p *xdpPart) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pausing = false
	if p.dp != nil {
		p.dp.Resume()
	}
}

func (p *xdpPart) paused() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.dp == nil {
		return p.pausing
	}
	return p.dp.Paused()
}

func (p *xdpPart) setKeyRing(kr *token.KeyRing) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.KeyRing = kr // what a reacquired datapath starts with
	if p.dp == nil {
		return nil
	}
	return p.dp.SetKeyRing(kr)
}

func (p *xdpPart) close() error {
	p.mu.Lock()
	dp := p.dp
	p.dp = nil
	p.mu.Unlock()
	if dp == nil {
		return nil
	}
	return dp.Close()
}

func (p *xdpPart) stats(st *Stats) (err error) {
	if dp := p.running(); dp != nil {
		st.Datapath, err = dp.Stats()
	}
	return err
}
