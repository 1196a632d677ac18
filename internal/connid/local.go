package connid

import (
	"errors"

	"github.com/turboretry/turboretry/internal/protocol"
)

// DefaultMaxActive is how many of our connection IDs the peer may hold at
// once unless LocalConfig.MaxActive says otherwise; spare IDs let the peer
// migrate without waiting for us.
const DefaultMaxActive = 4

// defaultPeerLimit is the peer's active_connection_id_limit until its
// transport parameters arrive (RFC 9000 section 18.2).
const defaultPeerLimit = 2

// routeAttempts bounds the retries when AddRoute reports a collision.
const routeAttempts = 8

// NewConnectionID is the content of a NEW_CONNECTION_ID frame (RFC 9000
// section 19.15) that the connection should send.
type NewConnectionID struct {
	SequenceNumber      uint64
	RetirePriorTo       uint64
	ConnectionID        protocol.ConnectionID
	StatelessResetToken [TokenLen]byte
}

// LocalConfig configures LocalCIDs.
type LocalConfig struct {
	// Generator makes the IDs; its length applies to all of them.
	// Required.
	Generator *Generator
	// ResetKey is the static key tokens are derived from with
	// ResetTokenFor, so the Transport can reset connections it forgot.
	ResetKey [32]byte
	// MaxActive caps the IDs issued at once, whatever the peer allows.
	// 0 means DefaultMaxActive; values below 2 count as 2.
	MaxActive int
	// AddRoute is called for every ID that must reach this connection.
	// It returns false if the ID already belongs to another connection,
	// and a fresh one is drawn. Nil means the caller does not route.
	AddRoute func(protocol.ConnectionID) bool
	// RemoveRoute is called for every ID that must no longer reach this
	// connection. Nil means the caller does not route.
	RemoveRoute func(protocol.ConnectionID)
}

type localEntry struct {
	seq     uint64
	cid     protocol.ConnectionID
	token   [TokenLen]byte
	pending bool // a NEW_CONNECTION_ID frame for it is waiting to be sent
}

// LocalCIDs tracks the connection IDs this endpoint issued to its peer
// (RFC 9000 section 5.1.1): sequence 0 is the handshake Source Connection
// ID, later ones go out in NEW_CONNECTION_ID frames. It tells the
// Transport which IDs to route to the connection through the hooks.
type LocalCIDs struct {
	gen         *Generator
	key         [32]byte
	maxActive   int
	peerLimit   uint64
	addRoute    func(protocol.ConnectionID) bool
	removeRoute func(protocol.ConnectionID)

	active  []localEntry // ordered by sequence number
	nextSeq uint64

	initialDCID    protocol.ConnectionID
	hasInitialDCID bool
	closed         bool // RemoveAll was called: issue nothing more
}

// NewLocalCIDs issues sequence 0, routes it, and returns the manager.
// Nothing else is issued until SetPeerLimit.
func NewLocalCIDs(cfg LocalConfig) (*LocalCIDs, error) {
	if cfg.Generator == nil {
		return nil, ErrNoGenerator
	}
	l := &LocalCIDs{
		gen:         cfg.Generator,
		key:         cfg.ResetKey,
		maxActive:   cfg.MaxActive,
		peerLimit:   defaultPeerLimit,
		addRoute:    cfg.AddRoute,
		removeRoute: cfg.RemoveRoute,
	}
	if l.maxActive == 0 {
		l.maxActive = DefaultMaxActive
	}
	l.maxActive = max(l.maxActive, 2)
	if _, err := l.issue(false); err != nil {
		return nil, err
	}
	return l, nil
}

// HandshakeCID returns the ID of sequence 0, the Source Connection ID of
// our long header packets.
func (l *LocalCIDs) HandshakeCID() protocol.ConnectionID {
	if len(l.active) > 0 && l.active[0].seq == 0 {
		return l.active[0].cid
	}
	return protocol.ConnectionID{}
}

// HandshakeResetToken returns the stateless reset token of sequence 0,
// which a server sends as its stateless_reset_token transport parameter
// (RFC 9000 section 18.2).
func (l *LocalCIDs) HandshakeResetToken() [TokenLen]byte {
	return ResetTokenFor(l.key, l.HandshakeCID())
}

// IssuePreferredAddressCID issues sequence 1 for a server's
// preferred_address transport parameter (RFC 9000 section 5.1.1). It needs
// no NEW_CONNECTION_ID frame. Call it right after NewLocalCIDs.
func (l *LocalCIDs) IssuePreferredAddressCID() (protocol.ConnectionID, [TokenLen]byte, error) {
	if l.nextSeq != 1 || l.gen.Len() == 0 {
		return protocol.ConnectionID{}, [TokenLen]byte{}, ErrPreferredAddress
	}
	e, err := l.issue(false)
	if err != nil {
		return protocol.ConnectionID{}, [TokenLen]byte{}, err
	}
	return e.cid, e.token, nil
}

// SetPeerLimit records the peer's active_connection_id_limit transport
// parameter and issues IDs up to min(limit, MaxActive) (RFC 9000 section
// 5.1.1); their frames are then available from PopNewConnectionID. The
// transport parameter decoder rejects limits below 2, so smaller values
// are treated as 2. With zero-length IDs nothing is issued.
func (l *LocalCIDs) SetPeerLimit(limit uint64) error {
	l.peerLimit = max(limit, defaultPeerLimit)
	return l.replenish()
}

// limit returns how many IDs may be active at once.
func (l *LocalCIDs) limit() int {
	return int(min(l.peerLimit, uint64(l.maxActive)))
}

func (l *LocalCIDs) replenish() error {
	if l.gen.Len() == 0 || l.closed {
		return nil
	}
	for len(l.active) < l.limit() {
		if _, err := l.issue(true); err != nil {
			if errors.Is(err, ErrNoIDNow) {
				return nil // the owner calls Replenish once it has IDs
			}
			return err
		}
	}
	return nil
}

// ErrNoIDNow, returned by a Generator's fill, says that no ID can be made
// at this moment: LocalCIDs then issues the missing IDs when Replenish is
// called, instead of failing. A connection whose IDs come from the
// application's generator hands LocalCIDs IDs it made beforehand, without
// its lock, this way.
var ErrNoIDNow = errors.New("connid: no connection ID available now")

// Replenish issues IDs up to the limit, as after SetPeerLimit and a
// retirement; for a Generator that returned ErrNoIDNow.
func (l *LocalCIDs) Replenish() error { return l.replenish() }

// Missing returns how many IDs short of the limit the issued ones are.
func (l *LocalCIDs) Missing() int {
	if l.gen.Len() == 0 || l.closed {
		return 0
	}
	return max(l.limit()-len(l.active), 0)
}

// issue draws and routes the next ID; frame says whether it is announced
// in a NEW_CONNECTION_ID frame.
func (l *LocalCIDs) issue(frame bool) (localEntry, error) {
	var e localEntry
	for attempt := 0; ; attempt++ {
		if attempt == routeAttempts {
			return e, ErrRouteCollision
		}
		cid, err := l.gen.New()
		if err != nil {
			return e, err
		}
		// Zero-length IDs route by address, not by ID.
		if cid.Len() == 0 || l.addRoute == nil || l.addRoute(cid) {
			e.cid = cid
			break
		}
	}
	e.seq = l.nextSeq
	e.token = ResetTokenFor(l.key, e.cid)
	e.pending = frame
	l.nextSeq++
	l.active = append(l.active, e)
	return e, nil
}

// PopNewConnectionID returns the next NEW_CONNECTION_ID frame to send, if
// any, and forgets it: call OnNewConnectionIDLost if its packet is lost.
func (l *LocalCIDs) PopNewConnectionID() (NewConnectionID, bool) {
	for i := range l.active {
		e := &l.active[i]
		if e.pending {
			e.pending = false
			return NewConnectionID{
				SequenceNumber:      e.seq,
				ConnectionID:        e.cid,
				StatelessResetToken: e.token,
			}, true
		}
	}
	return NewConnectionID{}, false
}

// HasPendingNewConnectionID reports whether PopNewConnectionID has a frame.
func (l *LocalCIDs) HasPendingNewConnectionID() bool {
	for i := range l.active {
		if l.active[i].pending {
			return true
		}
	}
	return false
}

// OnNewConnectionIDLost queues the frame for seq again, unless the peer
// has retired that ID meanwhile (RFC 9000 section 13.3).
func (l *LocalCIDs) OnNewConnectionIDLost(seq uint64) {
	if i := l.find(seq); i >= 0 && seq != 0 {
		l.active[i].pending = true
	}
}

// HandleRetireConnectionID processes a RETIRE_CONNECTION_ID frame (RFC
// 9000 section 19.16) that arrived in a packet sent to packetDCID. It
// unroutes the retired ID and issues a replacement. Errors are
// *qerr.TransportError (PROTOCOL_VIOLATION) for the peer's mistakes.
func (l *LocalCIDs) HandleRetireConnectionID(seq uint64, packetDCID []byte) error {
	if l.gen.Len() == 0 {
		return errRetireZeroLength
	}
	if seq >= l.nextSeq {
		return errRetireNotIssued
	}
	i := l.find(seq)
	if i < 0 {
		return nil // retired before; frames may be repeated
	}
	if l.active[i].cid.Equal(packetDCID) {
		return errRetireOwnDCID
	}
	cid := l.active[i].cid
	l.active = append(l.active[:i], l.active[i+1:]...)
	if l.removeRoute != nil {
		l.removeRoute(cid)
	}
	return l.replenish()
}

// SetInitialDCID routes the Destination Connection ID the client chose
// for its first Initial (after a Retry: the Retry's SCID) to this
// connection until DropInitialDCID, so retransmitted Initials and 0-RTT
// packets still arrive. A server calls it once; calling it again replaces
// the previous one. A rejected route (collision) is reported as false.
func (l *LocalCIDs) SetInitialDCID(cid protocol.ConnectionID) bool {
	l.DropInitialDCID()
	if l.addRoute != nil && !l.addRoute(cid) {
		return false
	}
	l.initialDCID, l.hasInitialDCID = cid, true
	return true
}

// DropInitialDCID unroutes the ID of SetInitialDCID; the server calls it
// once the handshake is confirmed, as the client no longer uses it.
func (l *LocalCIDs) DropInitialDCID() {
	if !l.hasInitialDCID {
		return
	}
	if l.removeRoute != nil {
		l.removeRoute(l.initialDCID)
	}
	l.initialDCID, l.hasInitialDCID = protocol.ConnectionID{}, false
}

// RemoveAll unroutes every ID of the connection, for when it is gone.
// Later calls do nothing.
func (l *LocalCIDs) RemoveAll() {
	l.DropInitialDCID()
	if l.removeRoute != nil {
		for _, e := range l.active {
			if e.cid.Len() > 0 {
				l.removeRoute(e.cid)
			}
		}
	}
	l.active = l.active[:0]
	l.closed = true
}

// Active appends the IDs the peer may currently use to dst.
func (l *LocalCIDs) Active(dst []protocol.ConnectionID) []protocol.ConnectionID {
	for _, e := range l.active {
		dst = append(dst, e.cid)
	}
	return dst
}

// ActiveCount returns how many of our IDs the peer may currently use.
func (l *LocalCIDs) ActiveCount() int { return len(l.active) }

func (l *LocalCIDs) find(seq uint64) int {
	for i := range l.active {
		if l.active[i].seq == seq {
			return i
		}
	}
	return -1
}
