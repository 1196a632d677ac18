package host

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// agentPart is a running offload of one mode.
type agentPart interface {
	pause()
	resume()
	paused() bool
	setKeyRing(kr *token.KeyRing) error
	stats(st *Stats) error
	// release gives the interface up for a successor process (restart);
	// reacquire takes it back should the successor fail.
	release() error
	reacquire() error
	close() error
}

// Offload is an offload attached to a Transport. Its methods are safe for
// concurrent use.
type Offload struct {
	mode Mode
	part agentPart
}

// Stats is a snapshot of an offload's counters.
type Stats struct {
	// Mode is the offload's mode.
	Mode Mode
	// Datapath is the integrated datapath's counters (ModeXDP; zero
	// otherwise): the agent's verdicts, heartbeat and pause flag, the XDP
	// program's reasons and the AF_XDP frame counts.
	Datapath datapath.Stats
	// Announcer is the connection-ID announcer's counters (ModeSplit; zero
	// otherwise).
	Announcer announce.AnnouncerStats
}

// Attach starts the offload cfg describes in front of tr, which must not
// be listening yet (its connection ID length and ConnectionIDAdded hook
// are set here), and whose Conn is the UDP socket the agent protects: in
// ModeXDP Attach must run in that socket's network namespace, and the XDP
// program filters the socket's port on cfg.Iface. ModeNone is refused:
// there is nothing to attach. Close the Offload before tr.
func Attach(tr *quic.Transport, cfg Config) (*Offload, error) {
	return AttachWorkers([]*quic.Transport{tr}, nil, cfg)
}

// AttachWorkers is Attach for a server of several workers, one Transport
// per SO_REUSEPORT socket of one address (ListenWorkers): every Transport
// gets the hooks, the split mode announces the IDs of all of them, and in
// ModeXDP a validated Initial goes to the Transport trs[steer(payload)]
// (Workers.WorkerFor: the worker the sk_reuseport program would pick for
// it, so the client's later packets find its connection there). steer may
// be nil for a single Transport.
func AttachWorkers(trs []*quic.Transport, steer func(payload []byte) int, cfg Config) (*Offload, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if len(trs) == 0 || (len(trs) > 1 && steer == nil) {
		return nil, errors.New("offload: AttachWorkers needs the Transports and, for several, a steering function")
	}
	if err := checkIDs(trs, &cfg); err != nil {
		return nil, err
	}
	tr := trs[0]
	if cfg.KeyRing == nil {
		return nil, errors.New("offload: Config.KeyRing is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var (
		part agentPart
		err  error
	)
	switch cfg.Mode {
	case ModeXDP:
		ua, ok := tr.Conn.LocalAddr().(*net.UDPAddr)
		if !ok || ua.Port == 0 {
			return nil, fmt.Errorf("offload xdp: the Transport's socket (%v) has no UDP port", tr.Conn.LocalAddr())
		}
		part, err = attachXDP(trs, steer, &cfg, uint16(ua.Port))
	case ModeSplit:
		part, err = attachSplit(trs, &cfg)
	default:
		return nil, errors.New("offload: mode none: nothing to attach")
	}
	if err != nil {
		return nil, err
	}
	return &Offload{mode: cfg.Mode, part: part}, nil
}

// checkIDs checks that the Transports issue IDs of cfg.IDs' length (or,
// without IDs, that none has a generator of its own, since the agent's
// length is set on them).
func checkIDs(trs []*quic.Transport, cfg *Config) error {
	for i, tr := range trs {
		g := tr.ConnectionIDGenerator
		switch {
		case cfg.IDs == nil && g != nil:
			return fmt.Errorf("offload: Transport %d has its own ConnectionIDGenerator but Config.IDs is unset", i)
		case cfg.IDs != nil && (g == nil || g.ConnectionIDLen() != cfg.IDs.Len()):
			return fmt.Errorf("offload: Transport %d must issue the %d-byte IDs of Config.IDs (set its ConnectionIDGenerator)", i, cfg.IDs.Len())
		}
	}
	return nil
}

// cidLen is the length of the Transports' IDs, the fast path's key length.
func (c *Config) cidLen() int {
	if c.IDs != nil {
		return c.IDs.Len()
	}
	return agent.DefaultCIDLen
}

// macIDs returns the IDs the fast path verifies by MAC, or nil.
func (c *Config) macIDs() *quiclb.Codec {
	if c.IDs == nil || !c.IDs.HasMAC() || c.CacheOnly {
		return nil
	}
	return c.IDs
}

// setHooks gives every Transport the agent's ID length (unless it has its
// own generator) and the ConnectionIDAdded hook.
func setHooks(trs []*quic.Transport, cfg *Config, added func(cid []byte)) {
	for _, tr := range trs {
		if tr.ConnectionIDGenerator == nil {
			tr.ConnectionIDLength = cfg.cidLen()
		}
		tr.ConnectionIDAdded = added
	}
}

// Mode returns the offload's mode.
func (o *Offload) Mode() Mode { return o.mode }

// Pause stops the agent (fault injection): after its heartbeat goes stale
// the fast path passes everything and the Transport's own address
// validation takes over. In ModeSplit the agent is another process, so
// Pause only logs how to pause it there.
func (o *Offload) Pause() { o.part.pause() }

// Resume restarts a paused agent (in ModeSplit, logs how).
func (o *Offload) Resume() { o.part.resume() }

// Paused reports whether Pause stopped the agent; always false in
// ModeSplit.
func (o *Offload) Paused() bool { return o.part.paused() }

// SetKeyRing switches the agent (ModeXDP) or the announcements (ModeSplit)
// to a reloaded root secret; switch the Transport with SetTokenSecret at
// the same time, so each keeps accepting the other's tokens.
func (o *Offload) SetKeyRing(kr *token.KeyRing) error {
	if kr == nil {
		return errors.New("offload: SetKeyRing(nil)")
	}
	return o.part.setKeyRing(kr)
}

// Stats returns the offload's counters. It fails only when the XDP
// program's counters cannot be read; the other fields are filled then too.
func (o *Offload) Stats() (Stats, error) {
	st := Stats{Mode: o.mode}
	err := o.part.stats(&st)
	return st, err
}

// ErrReleaseBloomOnly is Release's refusal in ModeXDP with the Bloom-only
// fast path (Config.CacheOnly).
var ErrReleaseBloomOnly = errors.New("the Bloom-only fast path (--fastpath bloom) keeps this process's connection IDs in its own XDP program's cache, which a successor's program would not have; use the MAC fast path (the default) or stop and start")

// Release gives up what a successor process needs to take the offload
// over at a restart, and keeps serving without it: in ModeXDP the XDP
// program detaches and the AF_XDP sockets close, so every packet reaches
// the kernel stack, the Initials included, which the Transports' own
// address validation (their Retry policy) handles, as when the agent
// fails open. It is refused for the Bloom-only fast path (Config.CacheOnly):
// the connections' IDs are in this process's program cache only. Nothing
// to release in ModeSplit (the agent is another process). Reacquire undoes
// it.
func (o *Offload) Release() error { return o.part.release() }

// Reacquire starts again what Release gave up (the successor failed). It
// waits a little for the interface to come free (a successor just
// reaped). A no-op when nothing was released.
func (o *Offload) Reacquire() error { return o.part.reacquire() }

// Close stops the offload: in ModeXDP the program detaches, so the
// interface passes everything to the kernel again.
func (o *Offload) Close() error { return o.part.close() }
