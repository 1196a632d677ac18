package connid

import (
	"slices"

	"github.com/turboretry/turboretry/internal/protocol"
)

// NextUnused returns the lowest-sequence peer ID we have never sent with:
// the one to use towards a new peer address, since an ID seen on two
// paths would link them (RFC 9000 section 9.5). ok is false when the peer
// has issued no spare ID (or uses zero-length IDs).
func (r *RemoteCIDs) NextUnused() (cid protocol.ConnectionID, seq uint64, ok bool) {
	return r.NextUnusedExcept(nil)
}

// NextUnusedExcept is NextUnused skipping the sequences in reserved (the
// IDs already set aside for other new paths).
func (r *RemoteCIDs) NextUnusedExcept(reserved []uint64) (cid protocol.ConnectionID, seq uint64, ok bool) {
	if r.zeroLen {
		return protocol.ConnectionID{}, 0, false
	}
	for i := range r.active {
		e := &r.active[i]
		if !e.used && i != r.current && !slices.Contains(reserved, e.seq) {
			return e.cid, e.seq, true
		}
	}
	return protocol.ConnectionID{}, 0, false
}

// SwitchTo makes the ID with sequence seq the one in use and retires the
// previous one, queueing its RETIRE_CONNECTION_ID so the peer issues a
// replacement. A connection calls it when it moves to a new peer address.
// It fails with ErrNoSpareID, changing nothing, when seq is not an active
// ID other than the current one or when the retirement queue is full.
func (r *RemoteCIDs) SwitchTo(seq uint64) error {
	i := r.find(seq)
	if i < 0 || i == r.current || r.current < 0 ||
		r.pendingRetirements() >= r.maxPending || len(r.switchedAway) >= 2*r.limit {
		return ErrNoSpareID
	}
	old := r.active[r.current]
	if old.used && old.hasToken {
		r.detector.Remove(old.token)
	}
	r.retireQueue = append(r.retireQueue, old.seq)
	r.switchedAway = append(r.switchedAway, old.seq)
	n := len(r.active)
	copy(r.active[r.current:], r.active[r.current+1:])
	r.active[n-1] = remoteEntry{}
	r.active = r.active[:n-1]
	if i > r.current {
		i--
	}
	r.use(i)
	return nil
}

// retiredBySwitch reports whether SwitchTo retired seq, so that a
// retransmitted NEW_CONNECTION_ID for it does not bring it back.
func (r *RemoteCIDs) retiredBySwitch(seq uint64) bool {
	return slices.Contains(r.switchedAway, seq)
}

// pruneSwitchedAway forgets the sequences Retire Prior To now covers.
func (r *RemoteCIDs) pruneSwitchedAway() {
	kept := r.switchedAway[:0]
	for _, s := range r.switchedAway {
		if s >= r.retirePriorTo {
			kept = append(kept, s)
		}
	}
	r.switchedAway = kept
}
