package connid

import "github.com/turboretry/turboretry/internal/protocol"

// MaxRemoteLimit is the largest active_connection_id_limit RemoteCIDs
// accepts: the peer may fill it, and every entry costs memory and a
// reset token comparison.
const MaxRemoteLimit = 64

// DefaultRemoteLimit is a sensible active_connection_id_limit to
// advertise: enough spare IDs for a migration or two.
const DefaultRemoteLimit = 4

// RemoteConfig configures RemoteCIDs.
type RemoteConfig struct {
	// Limit is the active_connection_id_limit we advertised (2..
	// MaxRemoteLimit). 0 means DefaultRemoteLimit; 1 counts as 2, the
	// smallest value the transport parameter allows.
	Limit uint64
	// MaxPendingRetirements bounds the retired IDs whose
	// RETIRE_CONNECTION_ID frames are queued or unacknowledged. A peer
	// that retires more than that through retire_prior_to gets
	// CONNECTION_ID_LIMIT_ERROR (RFC 9000 section 5.1.2). 0 means
	// 4 * Limit, above the RFC's "at least twice the limit".
	MaxPendingRetirements int
}

type remoteEntry struct {
	seq      uint64
	cid      protocol.ConnectionID
	token    [TokenLen]byte
	hasToken bool
	used     bool // we sent with it, so its token may reset us
}

// RemoteCIDs tracks the connection IDs the peer issued to us (RFC 9000
// section 5.1.2), picks the Destination Connection ID to send with, and
// queues the RETIRE_CONNECTION_ID frames we owe.
type RemoteCIDs struct {
	limit      int
	maxPending int
	zeroLen    bool
	sawFrame   bool // a NEW_CONNECTION_ID frame was processed

	active  []remoteEntry // ordered by sequence number
	current int           // index into active of the ID in use

	// retirePriorTo is the largest Retire Prior To received. Every
	// sequence below it has been retired, received or not, so the
	// sequences alone say which frames are stale.
	retirePriorTo uint64
	retireQueue   []uint64 // RETIRE_CONNECTION_ID frames to send
	// switchedAway holds sequences at or above retirePriorTo that
	// SwitchTo retired; bounded by SwitchTo.
	switchedAway []uint64
	inFlight     int // sent and not yet acknowledged or lost

	detector ResetDetector
}

// NewRemoteCIDs returns a manager whose sequence 0 is initial: the peer's
// handshake Source Connection ID, or, on a client before the server
// answers, the random Destination Connection ID of the first Initial. A
// zero-length initial means the peer uses zero-length IDs, so it may not
// send NEW_CONNECTION_ID frames.
func NewRemoteCIDs(initial protocol.ConnectionID, cfg RemoteConfig) (*RemoteCIDs, error) {
	limit := cfg.Limit
	if limit == 0 {
		limit = DefaultRemoteLimit
	}
	if limit > MaxRemoteLimit {
		return nil, ErrBadLimit
	}
	limit = max(limit, defaultPeerLimit)
	r := &RemoteCIDs{
		limit:      int(limit),
		maxPending: cfg.MaxPendingRetirements,
		zeroLen:    initial.Len() == 0,
		active:     make([]remoteEntry, 1, limit),
	}
	if r.maxPending <= 0 {
		r.maxPending = 4 * r.limit
	}
	r.active[0] = remoteEntry{seq: 0, cid: initial, used: true}
	return r, nil
}

// SetHandshakeCID replaces sequence 0: a client calls it with the Source
// Connection ID of the server's first Initial or of a Retry. It fails with
// ErrHandshakeDone once NEW_CONNECTION_ID frames have arrived.
func (r *RemoteCIDs) SetHandshakeCID(cid protocol.ConnectionID) error {
	if r.sawFrame || len(r.active) != 1 || r.active[0].seq != 0 {
		return ErrHandshakeDone
	}
	r.active[0].cid = cid
	r.zeroLen = cid.Len() == 0
	return nil
}

// SetResetToken records the server's stateless_reset_token transport
// parameter, the token of sequence 0 (RFC 9000 section 18.2). It does
// nothing if sequence 0 was retired already.
func (r *RemoteCIDs) SetResetToken(token [TokenLen]byte) {
	if i := r.find(0); i >= 0 {
		r.setToken(i, token)
	}
}

// AddPreferredAddressCID stores the connection ID of the server's
// preferred_address transport parameter, which has sequence 1 (RFC 9000
// section 5.1.1). Errors are those of HandleNewConnectionID.
func (r *RemoteCIDs) AddPreferredAddressCID(cid []byte, token [TokenLen]byte) error {
	return r.HandleNewConnectionID(1, 0, cid, token)
}

// HandleNewConnectionID processes a NEW_CONNECTION_ID frame (RFC 9000
// sections 5.1.2 and 19.15): it retires every sequence below
// retirePriorTo (queueing RETIRE_CONNECTION_ID frames), stores the new ID
// and switches away from the ID in use if it was retired. Repeated frames
// and frames for sequences already retired are ignored. Errors are
// *qerr.TransportError: FRAME_ENCODING_ERROR, PROTOCOL_VIOLATION or
// CONNECTION_ID_LIMIT_ERROR; the connection must close after one.
func (r *RemoteCIDs) HandleNewConnectionID(seq, retirePriorTo uint64, cid []byte, token [TokenLen]byte) error {
	if r.zeroLen {
		return errNCIDZeroLength
	}
	if len(cid) == 0 || len(cid) > protocol.MaxConnectionIDLen {
		return errNCIDBadLength
	}
	if retirePriorTo > seq {
		return errNCIDRetirePriorTo
	}
	r.sawFrame = true
	if seq < r.retirePriorTo || r.retiredBySwitch(seq) {
		// Retired (and its RETIRE_CONNECTION_ID queued) when
		// retirePriorTo passed it, even if this is the first copy, or
		// when we moved to a new path.
		return nil
	}
	for i := range r.active {
		e := &r.active[i]
		if e.seq == seq {
			if !e.cid.Equal(cid) || (e.hasToken && e.token != token) {
				return errNCIDSeqReused
			}
			if !e.hasToken {
				r.setToken(i, token)
			}
			return nil
		}
		if e.cid.Equal(cid) {
			return errNCIDCIDReused
		}
	}
	if retirePriorTo > r.retirePriorTo {
		if err := r.retireBelow(retirePriorTo); err != nil {
			return err
		}
	}
	if len(r.active) >= r.limit {
		return errNCIDTooMany
	}
	e := remoteEntry{seq: seq, token: token, hasToken: true}
	e.cid, _ = protocol.ParseConnectionID(cid) // length checked above
	pos := len(r.active)
	for pos > 0 && r.active[pos-1].seq > seq {
		pos--
	}
	r.active = append(r.active, remoteEntry{})
	copy(r.active[pos+1:], r.active[pos:])
	r.active[pos] = e
	if r.current >= 0 && pos <= r.current {
		r.current++
	}
	if r.current < 0 {
		r.use(0) // lowest sequence: the next one the peer expects us to use
	}
	return nil
}

// retireBelow retires every sequence in [r.retirePriorTo, rpt), including
// ones whose frames have not arrived: the peer counts them as active until
// it sees our RETIRE_CONNECTION_ID.
func (r *RemoteCIDs) retireBelow(rpt uint64) error {
	n := rpt - r.retirePriorTo
	avail := r.maxPending - r.pendingRetirements()
	if avail < 0 || n > uint64(avail) {
		return errNCIDTooManyRetire
	}
	for s := r.retirePriorTo; s < rpt; s++ {
		r.retireQueue = append(r.retireQueue, s)
	}
	r.retirePriorTo = rpt
	r.pruneSwitchedAway()
	cur := r.current
	r.current = -1
	kept := r.active[:0]
	for i, e := range r.active {
		if e.seq >= rpt {
			if i == cur {
				r.current = len(kept)
			}
			kept = append(kept, e)
			continue
		}
		if e.used && e.hasToken {
			r.detector.Remove(e.token)
		}
	}
	// Clear the tail so removed IDs do not linger in the array.
	clear(r.active[len(kept):])
	r.active = kept
	if r.current < 0 && len(r.active) > 0 {
		r.use(0)
	}
	return nil
}

// use makes active[i] the ID in use and watches for its reset token.
func (r *RemoteCIDs) use(i int) {
	r.current = i
	e := &r.active[i]
	e.used = true
	if e.hasToken {
		r.detector.Add(e.token)
	}
}

func (r *RemoteCIDs) setToken(i int, token [TokenLen]byte) {
	e := &r.active[i]
	if e.used && e.hasToken {
		r.detector.Remove(e.token)
	}
	e.token, e.hasToken = token, true
	if e.used {
		r.detector.Add(token)
	}
}

// Current returns the Destination Connection ID to send with.
func (r *RemoteCIDs) Current() protocol.ConnectionID {
	if r.current < 0 {
		return protocol.ConnectionID{}
	}
	return r.active[r.current].cid
}

// CurrentSequence returns the sequence number of Current.
func (r *RemoteCIDs) CurrentSequence() uint64 {
	if r.current < 0 {
		return 0
	}
	return r.active[r.current].seq
}

// CurrentResetToken returns the stateless reset token of Current; ok is
// false while it is unknown (sequence 0 before the server's transport
// parameters, or any client-issued sequence 0).
func (r *RemoteCIDs) CurrentResetToken() (token [TokenLen]byte, ok bool) {
	if r.current < 0 {
		return token, false
	}
	e := &r.active[r.current]
	return e.token, e.hasToken
}

// ActiveCount returns the number of the peer's IDs we hold unretired.
func (r *RemoteCIDs) ActiveCount() int { return len(r.active) }

// IsStatelessReset reports whether datagram ends in the reset token of an
// ID we have sent with and not retired (RFC 9000 section 10.3.1).
func (r *RemoteCIDs) IsStatelessReset(datagram []byte) bool {
	return r.detector.IsStatelessReset(datagram)
}

// PopRetireConnectionID returns the sequence number of the next
// RETIRE_CONNECTION_ID frame to send. Report its fate with OnRetireAcked
// or OnRetireLost.
func (r *RemoteCIDs) PopRetireConnectionID() (seq uint64, ok bool) {
	if len(r.retireQueue) == 0 {
		return 0, false
	}
	seq = r.retireQueue[0]
	r.retireQueue = append(r.retireQueue[:0], r.retireQueue[1:]...)
	r.inFlight++
	return seq, true
}

// HasPendingRetireConnectionID reports whether PopRetireConnectionID has a
// frame.
func (r *RemoteCIDs) HasPendingRetireConnectionID() bool { return len(r.retireQueue) > 0 }

// OnRetireAcked records that a RETIRE_CONNECTION_ID frame was acknowledged.
func (r *RemoteCIDs) OnRetireAcked(uint64) {
	if r.inFlight > 0 {
		r.inFlight--
	}
}

// OnRetireLost queues a lost RETIRE_CONNECTION_ID frame again.
func (r *RemoteCIDs) OnRetireLost(seq uint64) {
	if r.inFlight > 0 {
		r.inFlight--
	}
	r.retireQueue = append(r.retireQueue, seq)
}

// pendingRetirements counts retirements not yet acknowledged.
func (r *RemoteCIDs) pendingRetirements() int { return len(r.retireQueue) + r.inFlight }

func (r *RemoteCIDs) find(seq uint64) int {
	for i := range r.active {
		if r.active[i].seq == seq {
			return i
		}
	}
	return -1
}
