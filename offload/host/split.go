package host

import (
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// splitPart is the host's part of the split mode: the agent runs in
// another process (on a DPU, or in a namespace in front of this one), and
// all the host does is announce the connection IDs it routes, which the
// agent cannot read from the encrypted NEW_CONNECTION_ID frames.
type splitPart struct {
	a   *announce.Announcer
	cfg *Config
}

// attachSplit makes the Transports use the agent's connection ID length
// and announce every ID they route to cfg.AgentControl, and all of them
// again periodically, so an agent that restarted with an empty cache
// learns them back; IDs whose MAC the agent verifies are left out.
func attachSplit(trs []*quic.Transport, cfg *Config) (agentPart, error) {
	var skip func([]byte) bool
	if ids := cfg.macIDs(); ids != nil {
		skip = ids.Verify
	}
	n := cfg.cidLen()
	a, err := announce.NewAnnouncer(announce.AnnouncerConfig{
		Agent:  cfg.AgentControl,
		Key:    announce.Key(cfg.KeyRing),
		CIDLen: n,
		Active: func(yield func([]byte) bool) {
			for _, tr := range trs {
				stop := false
				tr.ConnectionIDs(func(cid []byte) bool {
					stop = !yield(cid)
					return !stop
				})
				if stop {
					return
				}
			}
		},
		Skip:   skip,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	admitted := cfg.Admitted
	setHooks(trs, cfg, func(cid []byte) {
		// A client's Initial DCID of another length only appears in long
		// headers, which the agent sees anyway.
		if len(cid) == n {
			a.Add(cid)
		}
		if admitted != nil {
			admitted(cid, nil)
		}
	})
	cfg.Logger.Info("offload split: announcing connection IDs", "agent", cfg.AgentControl.String())
	return &splitPart{a: a, cfg: cfg}, nil
}

// pause and resume only say where to go: the agent is another process,
// paused with its own SIGUSR1 and SIGUSR2 (or stopped) to exercise its
// fail-open.
func (p *splitPart) pause() {
	p.cfg.Logger.Warn("offload split: the agent is a separate process; send SIGUSR1 to turboretry agent to pause it")
}

func (p *splitPart) resume() {
	p.cfg.Logger.Warn("offload split: the agent is a separate process; send SIGUSR2 to turboretry agent to resume it")
}

// paused is false: this process pauses nothing.
func (p *splitPart) paused() bool { return false }

// setKeyRing switches the announcements to a reloaded root secret; the
// agent must reload the same one.
func (p *splitPart) setKeyRing(kr *token.KeyRing) error {
	p.a.SetKey(announce.Key(kr))
	return nil
}

func (p *splitPart) stats(st *Stats) error {
	st.Announcer = p.a.Stats()
	return nil
}

// The agent is another process, which the successor joins.
func (p *splitPart) release() error   { return nil }
func (p *splitPart) reacquire() error { return nil }

func (p *splitPart) close() error { return p.a.Close() }
