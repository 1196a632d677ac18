package fileserver

import (
	"errors"
	"log/slog"
	"net/netip"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// startOffload starts the integrated XDP datapath in front of tr, which
// must not be listening yet: validated Initials go straight into tr, and
// every connection ID tr routes is admitted to the fast path. It runs in
// the caller's network namespace (that of cfg.Iface).
func startOffload(cfg *OffloadConfig, port uint16, kr *token.KeyRing, tr *quic.Transport, log *slog.Logger) (offloader, error) {
	dp, err := datapath.Start(datapath.Config{
		Iface:       cfg.Iface,
		Port:        port,
		KeyRing:     kr,
		CIDLen:      agent.DefaultCIDLen,
		StaleAfter:  cfg.StaleAfter,
		RotateEvery: cfg.window(),
		Deliver: func(pkt []byte, from, _ netip.AddrPort) {
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
	// The fast path keys on the server's connection IDs: ours must have
	// the length it was built for.
	tr.ConnectionIDLength = agent.DefaultCIDLen
	tr.ConnectionIDAdded = func(cid []byte) {
		// A client-chosen Initial DCID of another length is refused; it
		// only ever appears in long headers, which reach the agent anyway.
		err := dp.Admit(cid)
		if err != nil && !errors.Is(err, fastpath.ErrCIDLength) {
			log.Warn("offload: admitting a connection ID to the fast path", "err", err)
		}
		if cfg.admitted != nil {
			cfg.admitted(cid, err)
		}
	}
	return dp, nil
}
