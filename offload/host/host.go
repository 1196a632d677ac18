package host

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// agentPart is a running offload of one mode.
type agentPart interface {
	pause()
	resume()
	paused() bool
	setKeyRing(kr *token.KeyRing) error
	stats(st *Stats) error
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
	if err := cfg.Check(); err != nil {
		return nil, err
	}
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
		part, err = attachXDP(tr, &cfg, uint16(ua.Port))
	case ModeSplit:
		part, err = attachSplit(tr, &cfg)
	default:
		return nil, errors.New("offload: mode none: nothing to attach")
	}
	if err != nil {
		return nil, err
	}
	return &Offload{mode: cfg.Mode, part: part}, nil
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

// Close stops the offload: in ModeXDP the program detaches, so the
// interface passes everything to the kernel again.
func (o *Offload) Close() error { return o.part.close() }
