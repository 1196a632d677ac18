package host

import (
	"errors"
	"net/netip"

	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// xdpPart is the integrated XDP datapath.
type xdpPart struct{ dp *datapath.Datapath }

// attachXDP starts the integrated XDP datapath on cfg.Iface for port in
// front of the Transports: validated Initials go straight into the one
// steer picks, and every connection ID they route is admitted to the fast
// path (nothing for one that verifies on its MAC). It runs in the
// caller's network namespace (that of cfg.Iface).
func attachXDP(trs []*quic.Transport, steer func([]byte) int, cfg *Config, port uint16) (agentPart, error) {
	log := cfg.Logger
	dp, err := datapath.Start(datapath.Config{
		Iface:       cfg.Iface,
		Port:        port,
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
	if err != nil {
		return nil, err
	}
	admitted := cfg.Admitted
	// The fast path keys on the server's connection IDs: ours must have
	// the length it was built for.
	setHooks(trs, cfg, func(cid []byte) {
		// A client-chosen Initial DCID of another length is refused; it
		// only ever appears in long headers, which reach the agent anyway.
		err := dp.Admit(cid)
		if err != nil && !errors.Is(err, fastpath.ErrCIDLength) {
			log.Warn("offload: admitting a connection ID to the fast path", "err", err)
		}
		if admitted != nil {
			admitted(cid, err)
		}
	})
	return xdpPart{dp}, nil
}

func (p xdpPart) pause()                             { p.dp.Pause() }
func (p xdpPart) resume()                            { p.dp.Resume() }
func (p xdpPart) paused() bool                       { return p.dp.Paused() }
func (p xdpPart) setKeyRing(kr *token.KeyRing) error { return p.dp.SetKeyRing(kr) }
func (p xdpPart) close() error                       { return p.dp.Close() }
func (p xdpPart) stats(st *Stats) (err error) {
	st.Datapath, err = p.dp.Stats()
	return err
}
