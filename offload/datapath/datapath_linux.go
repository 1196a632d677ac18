package datapath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/afxdp"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quiclb"
)

// Datapath is a running agent datapath on one interface: the XDP program,
// one AF_XDP socket and agent worker per receive queue, the heartbeat and
// the cache rotation. Its methods are safe for concurrent use.
type Datapath struct {
	cfg    Config
	prog   *xdp.Program
	engine *agent.Engine
	queues []*queue

	// egress is an agent worker of its own for ObserveEgress, which the
	// stack calls from its goroutines: a Worker wants one user at a time.
	egressMu sync.Mutex
	egress   *agent.Worker

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start sets the datapath up on cfg.Iface in the calling thread's network
// namespace and starts it. Everything is in place (sockets registered,
// first heartbeat written) before the program is attached, so the first
// redirected Initial finds its socket. On error nothing is left behind.
func Start(cfg Config) (*Datapath, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(cfg.Iface)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoInterface, cfg.Iface, err)
	}
	if cfg.Queues == 0 {
		if cfg.Queues, err = activeQueues(cfg.Iface, ifi.Index); err != nil {
			return nil, fmt.Errorf("%w: counting the queues of %s: %w", ErrNoInterface, cfg.Iface, err)
		}
		if cfg.Queues == 0 {
			return nil, fmt.Errorf("%w: %s reports no receive queues", ErrNoInterface, cfg.Iface)
		}
	}
	d := &Datapath{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			d.release()
		}
	}()
	var macIDs *quiclb.Codec // what the program verifies: IDs with a MAC only
	if cfg.IDs != nil && cfg.IDs.HasMAC() && !cfg.CacheOnly {
		macIDs = cfg.IDs
	}
	d.prog, err = xdp.Load(xdp.Config{Port: cfg.Port, CIDLen: cfg.CIDLen, Key: cfg.CacheKey, IDs: macIDs,
		StaleAfter: cfg.StaleAfter, Queues: cfg.Queues, PrefixRate: cfg.PrefixRate})
	if err != nil {
		return nil, classify(ErrLoad, "loading", err)
	}
	prog := d.prog
	var agentIDs agent.ServerIDs // no typed nil in the interface
	switch {
	case cfg.IDs != nil && cfg.CacheOnly:
		agentIDs = unverified{cfg.IDs}
	case cfg.IDs != nil:
		agentIDs = cfg.IDs
	}
	d.engine, err = agent.New(agent.Config{
		KeyRing:           cfg.KeyRing,
		Cache:             prog.Cache(),
		CIDLen:            cfg.CIDLen,
		IDs:               agentIDs,
		IDWorkers:         cfg.IDWorkers,
		Workers:           cfg.Queues + 1, // the last one watches egress
		HeartbeatInterval: cfg.HeartbeatInterval,
		OnHeartbeat:       func(time.Time) { d.beat() },
		PrefixRate:        cfg.PrefixRate,
		OnPrefixEmpty:     prog.PrefixEmptied,
		OnAttemptAdmitted: prog.AttemptAdmitted,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	d.egress = d.engine.Worker(cfg.Queues)
	for q := range cfg.Queues {
		s, err := afxdp.Open(ifi.Index, q, cfg.Socket)
		if err != nil {
			return nil, classify(ErrSocket, fmt.Sprintf("opening queue %d of %s", q, cfg.Iface), err)
		}
		d.queues = append(d.queues, newQueue(s, d.engine.Worker(q), cfg.Deliver, cfg.Forward))
		if err := s.Register(prog.XSKMap(), uint32(q)); err != nil {
			return nil, classify(ErrSocket, fmt.Sprintf("registering queue %d", q), err)
		}
	}
	if err := prog.Beat(xdp.MonotonicNow()); err != nil {
		return nil, fmt.Errorf("%w: first heartbeat: %w", ErrLoad, err)
	}
	if err := prog.Attach(cfg.Iface, cfg.XDPMode); err != nil {
		return nil, classify(ErrLoad, "attaching to "+cfg.Iface, err)
	}

	// The engine records this first heartbeat too (Stats.Heartbeat is
	// set from the start, not only once the heartbeat goroutine ran).
	d.engine.Beat()
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	for _, q := range d.queues {
		d.wg.Go(func() {
			if err := q.run(ctx); err != nil {
				// A dead queue would swallow its Initials: stop the
				// heartbeat so the program fails open instead.
				cfg.Logger.Error("datapath: queue failed; failing open", "iface", cfg.Iface, "queue", q.sock.Queue(), "err", err)
				d.engine.Pause()
			}
		})
	}
	d.wg.Go(func() { d.engine.RunHeartbeat(ctx) })
	d.wg.Go(func() { _ = prog.Cache().RunRotation(ctx, cfg.RotateEvery) })
	ok = true
	cfg.Logger.Info("datapath: started", "iface", cfg.Iface, "queues", cfg.Queues, "port", cfg.Port,
		"zero_copy", d.queues[0].sock.ZeroCopy(), "stale_after", cfg.StaleAfter)
	return d, nil
}

// unverified is a layout whose MAC the fast path does not check
// (Config.CacheOnly): the agent makes Retry SCIDs in it but admits them.
type unverified struct{ *quiclb.Codec }

func (unverified) Verify([]byte) bool { return false }

// Run starts a datapath and closes it when ctx is done.
func Run(ctx context.Context, cfg Config) error {
	d, err := Start(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return d.Close()
}

// classify wraps err of step what under kind, adding ErrPermission when the
// kernel refused for lack of privilege.
func classify(kind error, what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, afxdp.ErrPermission) {
		return fmt.Errorf("%w: %w: %s: %w", ErrPermission, kind, what, err)
	}
	return fmt.Errorf("%w: %s: %w", kind, what, err)
}

// beat writes the heartbeat the program checks; the engine calls it while
// not paused.
func (d *Datapath) beat() {
	if err := d.prog.Beat(xdp.MonotonicNow()); err != nil {
		d.cfg.Logger.Warn("datapath: heartbeat", "err", err)
	}
}

// Pause stops the agent (fault injection): it drops what still reaches it
// and stops the heartbeat, so after Config.StaleAfter the program passes
// everything to the kernel stack.
func (d *Datapath) Pause() { d.engine.Pause() }

// Resume restarts the agent; filtering resumes with the next heartbeat.
func (d *Datapath) Resume() { d.engine.Resume() }

// Paused reports whether the agent is paused.
func (d *Datapath) Paused() bool { return d.engine.Paused() }

// Queues returns the number of queues served.
func (d *Datapath) Queues() int { return len(d.queues) }

// ZeroCopy reports whether the AF_XDP sockets run in zero-copy mode.
func (d *Datapath) ZeroCopy() bool { return d.queues[0].sock.ZeroCopy() }

// ObserveEgress shows the agent a datagram the server sends (integrated
// mode: its first long-header packets), so the connection ID it chose is
// admitted to the fast-path cache and the client's later packets pass.
// It reports whether a connection ID was admitted.
func (d *Datapath) ObserveEgress(pkt []byte) bool {
	d.egressMu.Lock()
	defer d.egressMu.Unlock()
	ok := d.egress.ObserveEgress(pkt)
	d.egress.Flush()
	return ok
}

// Close detaches the program, stops the goroutines and closes the sockets
// and the program. It is idempotent.
func (d *Datapath) Close() error {
	d.closeOnce.Do(func() {
		// Detach first: from now on the kernel stack sees everything.
		err := d.prog.Detach()
		d.cancel()
		d.wg.Wait()
		d.closeErr = errors.Join(err, d.release())
		d.cfg.Logger.Info("datapath: closed", "iface", d.cfg.Iface)
	})
	return d.closeErr
}

// release closes the sockets and the program (detaching it).
func (d *Datapath) release() error {
	var errs []error
	for _, q := range d.queues {
		errs = append(errs, q.sock.Close())
	}
	if d.prog != nil {
		errs = append(errs, d.prog.Close())
	}
	return errors.Join(errs...)
}
