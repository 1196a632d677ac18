package agent

import (
	crand "crypto/rand"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// Worker is one agent worker. It owns its token Issuer and Validator, its
// random source, its scratch buffers and its counters, so it is not safe for
// concurrent use: one goroutine per Worker.
type Worker struct {
	eng       *Engine
	cache     CIDCache
	lookup    CIDLookup // nil when the cache cannot look up
	issuer    *token.Issuer
	validator *token.Validator
	keyGen    uint64 // the Engine key generation issuer and validator use
	// rng makes RSCIDs. ChaCha8 is a CSPRNG seeded from crypto/rand, so
	// RSCIDs stay unpredictable without a syscall each.
	rng *rand.ChaCha8
	// now is the time of the packet being processed (ProcessAt).
	now time.Time

	// refuseCredit is the closes this worker may still build for
	// over-rate Initials (PrefixRate.RefuseRate per second, as much at
	// once); refuseAt is when it was last refilled.
	refuseCredit float64
	refuseAt     time.Time

	hdr     wire.LongHeader
	rscid   [wire.MaxConnIDLen]byte
	payload [token.MaxPayloadLen]byte

	counters
}

func newWorker(e *Engine) (*Worker, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, err
	}
	w := &Worker{eng: e, cache: e.cfg.Cache, rng: rand.NewChaCha8(seed)}
	if err := w.useKeys(e.keys.Load()); err != nil {
		return nil, err
	}
	if w.cache == nil {
		w.cache = noCache{}
	}
	w.lookup, _ = w.cache.(CIDLookup)
	return w, nil
}

// useKeys builds the worker's Issuer and Validator from key generation g.
func (w *Worker) useKeys(g *keyGeneration) error {
	is, err := g.ring.NewIssuer(token.SourceAgent)
	if err != nil {
		return err
	}
	v, err := g.ring.NewValidator(w.eng.validatorConfig(g.cache))
	if err != nil {
		return err
	}
	w.issuer, w.validator, w.keyGen = is, v, g.gen
	return nil
}

// noCache stands in for a missing fast path.
type noCache struct{}

func (noCache) Insert([]byte) error { return nil }

// Process decides what to do with one datagram pkt received from the client
// at from. For SendReply the reply is built in out (appended to out[:0];
// with MaxReplyLen capacity nothing is allocated) and goes back to from.
// out must not overlap pkt. reply is nil for other verdicts. Process never
// modifies pkt and never keeps a reference to it.
//
// Only the first packet of a coalesced datagram is examined: the verdict
// covers the whole datagram.
func (w *Worker) Process(pkt []byte, from netip.AddrPort, out []byte) (v Verdict, r Reason, reply []byte) {
	return w.ProcessAt(pkt, from, out, time.Now())
}

// ProcessAt is Process at time now (token validity, the issued token's
// timestamp): a caller handling a batch of packets reads the clock once
// per batch, which saves a clock read per packet (about 100 ns on a VM's
// clock source; BenchmarkDatapathSaturation).
func (w *Worker) ProcessAt(pkt []byte, from netip.AddrPort, out []byte, now time.Time) (v Verdict, r Reason, reply []byte) {
	w.now = now
	r, reply = w.process(pkt, from, out)
	w.count(r)
	return r.Verdict(), r, reply
}

func (w *Worker) process(pkt []byte, from netip.AddrPort, out []byte) (Reason, []byte) {
	if w.eng.paused.Load() {
		return ReasonPaused, nil
	}
	if g := w.eng.keys.Load(); g.gen != w.keyGen {
		if err := w.useKeys(g); err != nil {
			return ReasonInternal, nil
		}
	}
	o, reply := w.eng.resp.Examine(pkt, &w.hdr, out[:0])
	switch o {
	case stateless.Initial:
		return w.initial(from, out)
	case stateless.VersionNegotiation:
		return ReasonVersionNegotiation, reply
	}
	return reasonOfOutcome(o), nil
}

// reasonOfOutcome is the drop reason for what the stateless responder found.
func reasonOfOutcome(o stateless.Outcome) Reason {
	switch o {
	case stateless.ConnIDTooLong:
		return ReasonCIDTooLong
	case stateless.VersionNegotiationPacket:
		// Version Negotiation is only ever sent by servers; never answer
		// one (RFC 9000 section 6.1).
		return ReasonVersionNegotiationIn
	case stateless.UnsupportedTooSmall:
		return ReasonUnsupportedTooSmall
	case stateless.UnexpectedRetry:
		return ReasonUnexpectedRetry
	case stateless.ShortHeader, stateless.NotInitial:
		// Short headers, 0-RTT and Handshake packets of admitted
		// connections pass the fast path by DCID, so this one is not known.
		return ReasonUnknownConnection
	case stateless.InitialTooSmall:
		return ReasonInitialTooSmall
	case stateless.DCIDTooShort:
		return ReasonDCIDTooShort
	}
	return ReasonMalformed
}
