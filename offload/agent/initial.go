package agent

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/token"
)

// initial handles a client Initial whose header w.hdr holds, which the
// stateless responder let through: large enough, and without a token only
// with a DCID the client may choose.
func (w *Worker) initial(from netip.AddrPort, out []byte) (Reason, []byte) {
	h := &w.hdr
	if len(h.Token) == 0 {
		return w.retry(from, out, ReasonRetry)
	}
	// An over-rate prefix's Initials are answered before any token work,
	// except those of a connection attempt admitted earlier: the other
	// datagram of its ClientHello and its retransmissions (the attempt's
	// first DCID, remembered), and its later Initials, to the host's ID,
	// which the token ties to the attempt (checked below, once it opens).
	lim := w.eng.prefixes
	over := lim != nil && lim.Over(from.Addr(), w.now)
	if over && !lim.Admitted(from.Addr(), h.DestConnID) && !w.mayBeLater(h.DestConnID) {
		return w.overRate(out)
	}
	res, err := w.validator.Validate(h.Token, token.TypeAny, from, w.now, w.payload[:0])
	if err != nil {
		tr := token.ReasonOf(err)
		if res.Type == token.TypeNewToken && tr > token.ReasonWrongType {
			// A well-formed new_token token that failed (old, another
			// address, another key): the client has not seen a Retry
			// yet, so it can take one (RFC 9000 section 8.1.3).
			return w.retry(from, out, ReasonRetryBadNewToken)
		}
		return ReasonOfToken(tr), nil
	}
	if res.Type == token.TypeNewToken {
		return w.newTokenInitial(w.now, from, out)
	}
	if bytes.Equal(res.RSCID, h.DestConnID) {
		if !w.takePrefixToken(from, h.DestConnID) {
			return w.overRate(out)
		}
		// An RSCID whose MAC the fast path verifies needs no entry.
		if !w.verifies(h.DestConnID) {
			w.admit(h.DestConnID)
		}
		return ReasonRetryTokenForwarded, nil
	}
	// The client's later Initials keep the token but switch the DCID to
	// the host's SCID, which egress admitted or which verifies.
	if w.mayBeLater(h.DestConnID) {
		// While the prefix is over, only an attempt that took its token
		// (the token's RSCID was its first DCID) goes on.
		if over && !lim.Admitted(from.Addr(), res.RSCID) {
			return w.overRate(out)
		}
		return ReasonRetryTokenKnownCID, nil
	}
	return ReasonRSCIDMismatch, nil
}

// mayBeLater reports whether an Initial's DCID may be a connection's
// later one: one of the server's IDs, or a DCID in the fast path's cache.
func (w *Worker) mayBeLater(dcid []byte) bool {
	return w.verifies(dcid) || w.lookup != nil && w.lookup.Contains(dcid)
}

// newTokenInitial handles an Initial in w.hdr whose new_token token
// validated. A later Initial of the connection it opened (the DCID is the
// host's SCID, which egress admitted) is forwarded as it is. A first
// Initial must be the token's first use (RFC 9000 section 8.1.4), or a
// retransmission of it: the replay filter decides by token and DCID, as
// the host's does when it checks the forwarded Initial again, so the two
// agree. A replay gets a Retry: its sender may be a benign client that
// reused a token. Without a CIDLookup the agent cannot tell later
// Initials from replays and leaves the check to the host.
func (w *Worker) newTokenInitial(now time.Time, from netip.AddrPort, out []byte) (Reason, []byte) {
	h := &w.hdr
	if w.lookup != nil {
		if w.lookup.Contains(h.DestConnID) {
			return ReasonNewTokenKnownCID, nil
		}
		if err := w.eng.cfg.ReplayFilter.Use(h.Token, h.DestConnID, now); err != nil {
			return w.retry(from, out, ReasonReplayedNewToken)
		}
		// Not a later Initial, so a first one: its DCID is the client's
		// choice, which a new_token token does not vouch for. The host
		// checks in the same order: the token is used up, the Initial
		// dropped.
		if !stateless.DCIDAcceptable(h, false) {
			return ReasonDCIDTooShort, nil
		}
	}
	if !w.takePrefixToken(from, h.DestConnID) {
		return w.overRate(out)
	}
	// The client's 0-RTT packets carry this DCID too. It is the client's
	// choice (8..20 bytes); the fast path keys long-header DCIDs longer
	// than the server's CID length by their first CIDLen bytes
	// (docs/fastpath.md), so admit that prefix.
	w.admit(cidPrefix(h.DestConnID, w.eng.cfg.CIDLen))
	return ReasonNewTokenForwarded, nil
}

// takePrefixToken takes a token from the bucket of from's prefix for a
// validated first Initial with DCID dcid, once per connection attempt (the
// ClientHello's other datagram and retransmissions take none), and
// reports whether the attempt may go on (always with the limit off). A
// newly admitted attempt goes to Config.OnAttemptAdmitted, so that the
// XDP program lets its other datagrams through while the prefix is over.
func (w *Worker) takePrefixToken(from netip.AddrPort, dcid []byte) bool {
	lim := w.eng.prefixes
	if lim == nil {
		return true
	}
	ok, first := lim.AllowAttempt(from.Addr(), dcid, w.now)
	if first && w.eng.cfg.OnAttemptAdmitted != nil {
		w.eng.cfg.OnAttemptAdmitted(lim.Config().PrefixOf(from.Addr()), dcid)
	}
	return ok
}

// overRate answers the Initial in w.hdr, whose prefix is over its rate:
// a stateless CONNECTION_REFUSED close, or nothing (prefixrate.Drop).
func (w *Worker) overRate(out []byte) (Reason, []byte) {
	pr := &w.eng.cfg.PrefixRate
	if pr.Action == prefixrate.Drop || !w.takeRefusal(pr.RefuseRate) {
		return ReasonPrefixRateDropped, nil
	}
	reply, err := w.eng.resp.AppendClose(out[:0], &w.hdr, &refused)
	if err != nil {
		return ReasonPrefixRateDropped, nil
	}
	return ReasonPrefixRateRefused, reply
}

// takeRefusal takes one close from the worker's refusal budget of rate
// per second (as much at once) and reports whether there was one.
func (w *Worker) takeRefusal(rate float64) bool {
	if elapsed := w.now.Sub(w.refuseAt); elapsed > 0 || w.refuseAt.IsZero() {
		w.refuseCredit = min(rate, w.refuseCredit+rate*elapsed.Seconds())
		if w.refuseAt.IsZero() {
			w.refuseCredit = rate
		}
		w.refuseAt = w.now
	}
	if w.refuseCredit < 1 {
		return false
	}
	w.refuseCredit--
	return true
}

// refused is the error of the close an over-rate Initial gets.
var refused = qerr.TransportError{Code: qerr.ConnectionRefused}

// retry builds the Retry for the Initial in w.hdr, to the client at from.
// Only an Initial whose DCID the client chose gets one.
func (w *Worker) retry(from netip.AddrPort, out []byte, r Reason) (Reason, []byte) {
	h := &w.hdr
	if !stateless.DCIDAcceptable(h, false) {
		return ReasonDCIDTooShort, nil
	}
	rscid := w.rscid[:w.eng.cfg.CIDLen]
	_, _ = w.rng.Read(rscid) // never fails; with IDs only the nonce is kept
	if ids := w.eng.cfg.IDs; ids != nil {
		// One of the server's IDs around the random nonce just drawn.
		if err := ids.Seal(rscid, int(w.rng.Uint64()%uint64(w.eng.cfg.IDWorkers))); err != nil {
			return ReasonInternal, nil
		}
	}
	// The token is minted straight into the Retry.
	reply, err := w.eng.resp.AppendIssuedRetry(out[:0], h, rscid, w.issuer, from, w.now)
	if err != nil {
		return ReasonInternal, nil
	}
	return r, reply
}

// verifies reports whether cid is one of the server's IDs with a MAC that
// the fast path verifies by itself.
func (w *Worker) verifies(cid []byte) bool {
	ids := w.eng.cfg.IDs
	return ids != nil && ids.Verify(cid)
}

// cidPrefix is the part of a long-header DCID the fast-path cache keys on:
// its first n bytes when it is longer, else the whole DCID (which the cache
// refuses when it is shorter than n).
func cidPrefix(dcid []byte, n int) []byte {
	if len(dcid) > n {
		return dcid[:n]
	}
	return dcid
}
