package host

import (
	"errors"

	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/quic"
)

// Workers is a server spread over several workers: the SO_REUSEPORT
// sockets of a reuseport.Group and one quic.Transport on each, issuing the
// connection IDs of its worker (quiclb.Generator), so that the
// sk_reuseport program keeps every connection on the Transport that holds
// it, whatever address the client sends from. Each Transport has its own
// receive loop; a connection lives on one of them.
type Workers struct {
	Group      *reuseport.Group
	Transports []*quic.Transport
}

// ListenWorkers opens the group (reuseport.Listen: one socket per worker,
// or the configured fallback) and makes the Transports. Set their other
// fields (AddressValidation, ...) before they first Listen, and hand them
// to AttachWorkers with WorkerFor for an offload.
func ListenWorkers(cfg reuseport.Config) (*Workers, error) {
	g, err := reuseport.Listen(cfg)
	if err != nil {
		return nil, err
	}
	return newWorkers(cfg, g)
}

// JoinWorkers is ListenWorkers for the process that takes over from a
// running one on a restart (reuseport.Join): its Transports issue the IDs
// of the other generation, and new connections come to them once
// Group.Activate switched the program.
func JoinWorkers(cfg reuseport.Config, inh *reuseport.Inheritance) (*Workers, error) {
	g, err := reuseport.Join(cfg, inh)
	if err != nil {
		return nil, err
	}
	return newWorkers(cfg, g)
}

func newWorkers(cfg reuseport.Config, g *reuseport.Group) (*Workers, error) {
	w := &Workers{Group: g}
	for i, c := range g.Conns() {
		gen, err := cfg.IDs.GeneratorOf(g.Generation(), i)
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		w.Transports = append(w.Transports, &quic.Transport{Conn: c, ConnectionIDGenerator: quic.ConnectionIDGeneratorFunc(gen.Len(), gen.Fill)})
	}
	return w, nil
}

// WorkerFor returns the worker whose Transport a datagram that did not
// come through the sockets (a validated Initial the agent injects) must go
// to: Group.WorkerFor.
func (w *Workers) WorkerFor(payload []byte) int { return w.Group.WorkerFor(payload) }

// Close closes the Transports, then the sockets.
func (w *Workers) Close() error {
	var errs []error
	for _, tr := range w.Transports {
		errs = append(errs, tr.Close())
	}
	return errors.Join(append(errs, w.Group.Close())...)
}
