package split

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/afxdp"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/token"
)

// Agent is a running split-mode agent: the datapath on the wire port, the
// host port's transmit socket and the control listener. Its methods are
// safe for concurrent use.
type Agent struct {
	cfg      Config
	dp       *datapath.Datapath
	host     *hostPort
	control  net.PacketConn
	listener *announce.Listener

	// admitFailed counts announced IDs the cache refused (wrong length).
	admitFailed atomic.Uint64

	cancel    context.CancelFunc
	served    chan struct{} // closed when the listener's Serve returns
	closeOnce sync.Once
	closeErr  error
}

// Start sets the agent up in the calling thread's network namespace and
// starts it. On error nothing is left behind: the program is not attached
// and every socket is closed.
func Start(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, served: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			_ = a.release()
		}
	}()
	if _, err := net.InterfaceByName(cfg.HostIface); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", datapath.ErrNoInterface, cfg.HostIface, err)
	}
	if a.host, err = openHostPort(cfg.HostIface); err != nil {
		if errors.Is(err, afxdp.ErrPermission) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: %w: opening an AF_XDP socket on %s: %w", datapath.ErrPermission, ErrHostPort, cfg.HostIface, err)
		}
		return nil, fmt.Errorf("%w: opening an AF_XDP socket on %s: %w", ErrHostPort, cfg.HostIface, err)
	}
	// The control socket before the datapath: a taken address fails Start
	// before anything filters.
	udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Control))
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", ErrControl, cfg.Control, err)
	}
	a.control = udp
	a.dp, err = datapath.Start(datapath.Config{
		Iface:       cfg.WireIface,
		Port:        cfg.Port,
		KeyRing:     cfg.KeyRing,
		CIDLen:      cfg.CIDLen,
		IDs:         cfg.IDs,
		IDWorkers:   cfg.IDWorkers,
		CacheOnly:   cfg.CacheOnly,
		StaleAfter:  cfg.StaleAfter,
		RotateEvery: cfg.RotateEvery,
		PrefixRate:  cfg.PrefixRate,
		Forward:     a.host.forward,
		Logger:      cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	a.listener, err = announce.NewListener(announce.ListenerConfig{
		Conn:   udp,
		Key:    announce.Key(cfg.KeyRing),
		CIDLen: cfg.CIDLen,
		Insert: a.admit,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrControl, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go func() {
		defer close(a.served)
		if err := a.listener.Serve(ctx); err != nil && ctx.Err() == nil {
			cfg.Logger.Error("split: control listener stopped", "err", err)
		}
	}()
	ok = true
	cfg.Logger.Debug("split: agent started", "wire", cfg.WireIface, "host", cfg.HostIface, "port", cfg.Port,
		"control", cfg.Control.String(), "queues", a.dp.Queues(), "zero_copy", a.dp.ZeroCopy(),
		"host_zero_copy", a.host.zeroCopy(), "cid_len", cfg.CIDLen, "rotate_every", cfg.RotateEvery,
		"idle_timeout", cfg.IdleTimeout)
	return a, nil
}

// admit is the listener's Insert: an announced connection ID enters the
// fast-path cache.
func (a *Agent) admit(cid []byte) {
	if err := a.dp.Admit(cid); err != nil {
		a.admitFailed.Add(1)
		if !errors.Is(err, fastpath.ErrCIDLength) {
			a.cfg.Logger.Warn("split: admitting an announced connection ID", "err", err)
		}
	}
}

// Admit inserts cid into the fast-path cache directly (what an announcement
// does); it fails for a cid not of Config.CIDLen bytes.
func (a *Agent) Admit(cid []byte) error { return a.dp.Admit(cid) }

// Admitted reports whether cid is in the fast-path cache now.
func (a *Agent) Admitted(cid []byte) bool { return a.dp.Admitted(cid) }

// SetKeyRing switches the agent's token keys and the control channel's key
// to a reloaded root secret (SIGHUP). The fast-path cache keeps its SipHash
// key until a restart, as in the integrated mode.
func (a *Agent) SetKeyRing(kr *token.KeyRing) error {
	if kr == nil {
		return fmt.Errorf("%w: nil key ring", ErrConfig)
	}
	if err := a.dp.SetKeyRing(kr); err != nil {
		return err
	}
	a.listener.SetKey(announce.Key(kr))
	return nil
}

// Pause stops the agent's datapath (fault injection): after StaleAfter the
// program passes everything to the host.
func (a *Agent) Pause() { a.dp.Pause() }

// Resume restarts a paused agent.
func (a *Agent) Resume() { a.dp.Resume() }

// Close detaches the program first (from then on everything passes to the
// host), then stops the listener and closes the sockets. It is idempotent.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.closeErr = a.release()
		a.cfg.Logger.Info("split: agent stopped", "wire", a.cfg.WireIface)
	})
	return a.closeErr
}

// release undoes whatever Start set up, in the order Close documents.
func (a *Agent) release() error {
	var errs []error
	if a.dp != nil {
		// Waits for the queue workers, so nothing forwards afterwards.
		errs = append(errs, a.dp.Close())
	}
	if a.cancel != nil {
		a.cancel()
	}
	if a.control != nil {
		errs = append(errs, a.control.Close())
	}
	if a.listener != nil && a.cancel != nil {
		<-a.served
	}
	if a.host != nil {
		errs = append(errs, a.host.close())
	}
	return errors.Join(errs...)
}
