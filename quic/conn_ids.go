package quic

import (
	"bytes"
	"errors"
	"slices"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// maxIssuedCIDs caps the connection IDs we hand a peer at once, whatever
// its active_connection_id_limit: each one is a route in the Transport.
const maxIssuedCIDs = connid.DefaultMaxActive

// remoteCIDLimit is the active_connection_id_limit we advertise: how many
// of the peer's IDs we store.
const remoteCIDLimit = connid.DefaultRemoteLimit

// cidState is the connection IDs of the connection, both ways (RFC 9000
// section 5.1). Guarded by Conn.mu.
type cidState struct {
	src  []byte // our connection ID
	dest []byte // the peer's current connection ID
	// origDest is the DCID of the client's first Initial; clientDest
	// (server) that of the Initial that created the connection: origDest,
	// or a Retry's SCID.
	origDest   []byte
	clientDest []byte
	retrySrc   []byte // client: SCID of the Retry it accepted

	local  *connid.LocalCIDs  // the IDs we issued; routes them through the Transport
	remote *connid.RemoteCIDs // the IDs the peer issued; nil until its transport parameters
	// own holds every ID the Transport routes to us, so a short header
	// packet is accepted for any of them.
	own map[string]struct{}
	// routedToken is the reset token the Transport routes to us: that of
	// the peer ID we send with. Only it can reset us (RFC 9000 section
	// 10.3.1), and routing one token keeps the Transport's table bounded
	// however many IDs the peer issues.
	routedToken    [connid.TokenLen]byte
	hasRoutedToken bool
	// rxDCID is the Destination Connection ID of the packet whose frames
	// are being processed: a RETIRE_CONNECTION_ID may not retire it.
	rxDCID []byte
	// With the application's ConnectionIDGenerator (pooled), local issues
	// IDs from spare, which run fills without mu (newSpareIDs, addSpare), so
	// the generator never runs under mu; spareFailed: it returned an
	// error, stop asking.
	pooled      bool
	spare       []ConnectionID
	spareFailed bool
}

// fillSpare makes IDs with gen until spare holds n; an error is returned
// only when none could be made.
func (s *cidState) fillSpare(gen *connid.Generator, n int) error {
	for len(s.spare) < n {
		id, err := gen.New()
		if err != nil {
			if len(s.spare) == 0 {
				return err
			}
			s.spareFailed = true
			return nil
		}
		s.spare = append(s.spare, id)
	}
	return nil
}

// popSpare is the fill of local's generator when pooled: a spare ID, or
// connid.ErrNoIDNow (local issues it once run topped spare up).
func (s *cidState) popSpare(dst []byte) error {
	n := len(s.spare)
	if n == 0 {
		return connid.ErrNoIDNow
	}
	copy(dst, s.spare[n-1].Bytes())
	s.spare = s.spare[:n-1]
	return nil
}

// newSpareIDs makes up to n IDs with gen, the application's
// ConnectionIDGenerator, without Conn.mu; failed says gen returned an
// error.
func newSpareIDs(gen *connid.Generator, n int) (ids []ConnectionID, failed bool) {
	ids = make([]ConnectionID, 0, n)
	for range n {
		id, err := gen.New()
		if err != nil {
			return ids, true
		}
		ids = append(ids, id)
	}
	return ids, false
}

// addSpare takes the IDs newSpareIDs made and issues those the peer is
// owed, unless the connection closed; it reports whether NEW_CONNECTION_ID
// frames are to be sent.
func (s *cidState) addSpare(ids []ConnectionID, failed, closed bool) bool {
	s.spareFailed = failed
	if closed || s.local == nil {
		return false
	}
	s.spare = append(s.spare, ids...)
	_ = s.local.Replenish() // a route collision only leaves the peer fewer IDs
	return s.local.HasPendingNewConnectionID()
}

// spareShort returns how many IDs run should make for spare.
func (s *cidState) spareShort(closed bool) int {
	if !s.pooled || s.spareFailed || closed {
		return 0
	}
	return max(maxIssuedCIDs-len(s.spare), 0)
}

// tokenState is the address validation tokens a connection carries (RFC
// 9000 section 8.1.3). Guarded by Conn.mu.
type tokenState struct {
	initial  []byte // client: the token of our Initials (Retry or NEW_TOKEN)
	storeKey string // client: where NEW_TOKEN tokens are stored (set before run starts, read by run without mu)
	// issued (server) is the NEW_TOKEN token to send once the handshake
	// is confirmed; sendIssued while it is unsent or lost.
	issued     []byte
	sendIssued bool
	// toStore (client) holds NEW_TOKEN tokens received and not yet given
	// to Config.TokenStore, which run does without mu (takeToStore); at
	// most maxTokensToStore, the newest.
	toStore []*ClientToken
}

// maxTokensToStore bounds the NEW_TOKEN tokens waiting for the TokenStore:
// a server sending many in one flight gets its newest stored.
const maxTokensToStore = 4

// received queues a NEW_TOKEN token for the TokenStore.
func (s *tokenState) received(token []byte) {
	if len(s.toStore) == maxTokensToStore {
		s.toStore = append(s.toStore[:0], s.toStore[1:]...)
	}
	s.toStore = append(s.toStore, &ClientToken{data: slices.Clone(token)})
}

// takeToStore returns the tokens to give to the TokenStore, and forgets
// them.
func (s *tokenState) takeToStore() []*ClientToken {
	t := s.toStore
	s.toStore = nil
	return t
}

// initLocal issues our handshake connection ID (sequence 0), routes it to
// connection c on t (and on the client paths of ps, telling out), and sets
// s.src. With zero-length IDs the connection is routed by the empty ID, as
// the only one on its Transport.
func (s *cidState) initLocal(t *Transport, c *Conn, out *callbackOutbox, ps *pathState) error {
	s.own = make(map[string]struct{})
	gen := t.cidGen
	if t.ConnectionIDGenerator != nil && gen.Len() > 0 {
		// The application's generator: made here, before the connection
		// runs (no lock), for the handshake ID and those issued with
		// the peer's limit; later ones by run without mu.
		if err := s.fillSpare(t.cidGen, maxIssuedCIDs+1); err != nil {
			return err
		}
		var err error
		if gen, err = connid.NewGeneratorFunc(gen.Len(), s.popSpare); err != nil {
			return err
		}
		s.pooled = true
	}
	l, err := connid.NewLocalCIDs(connid.LocalConfig{
		Generator: gen,
		ResetKey:  t.localResetKey(),
		MaxActive: maxIssuedCIDs,
		AddRoute: func(cid ConnectionID) bool {
			b := cid.Bytes()
			if !t.addHandler(b, c) {
				return false
			}
			out.routed(t, b)
			s.own[string(b)] = struct{}{}
			// A client's other paths route it too; a collision there
			// only costs that path this ID.
			for _, p := range ps.extra {
				if p.t.addHandler(b, c) {
					out.routed(p.t, b)
				}
			}
			return true
		},
		RemoveRoute: func(cid ConnectionID) {
			b := cid.Bytes()
			delete(s.own, string(b))
			t.removeHandler(b, c)
			for _, p := range ps.extra {
				p.t.removeHandler(b, c)
			}
		},
	})
	if err != nil {
		if errors.Is(err, connid.ErrRouteCollision) && t.isClosed() {
			return t.closedErr()
		}
		return err
	}
	s.local = l
	s.src = l.HandshakeCID().Bytes()
	if len(s.src) == 0 && !t.addHandler(s.src, c) {
		return t.closedErr()
	}
	return nil
}

// owns reports whether dcid is one of the IDs routed to the connection.
func (s *cidState) owns(dcid []byte) bool {
	if bytes.Equal(dcid, s.src) {
		return true
	}
	_, ok := s.own[string(dcid)]
	return ok
}

// initRemote starts tracking the peer's IDs once its handshake ID is final
// (its transport parameters p authenticated it), and issues ours up to its
// active_connection_id_limit. The reset token is routed to c on t. The
// caller wakes the connection to send the new IDs.
func (s *cidState) initRemote(p *wire.TransportParameters, t *Transport, c *Conn) error {
	if s.remote == nil {
		cid, err := protocol.ParseConnectionID(s.dest)
		if err != nil {
			return qerr.NewProtocolViolation(0, "bad connection ID")
		}
		r, err := connid.NewRemoteCIDs(cid, connid.RemoteConfig{Limit: remoteCIDLimit})
		if err != nil {
			return err
		}
		s.remote = r
	}
	if p.HasStatelessResetToken {
		s.remote.SetResetToken(p.StatelessResetToken)
	}
	s.routeResetToken(t, c)
	// Failing to route a new ID (the Transport is closing) only leaves
	// the peer fewer spare IDs.
	_ = s.local.SetPeerLimit(p.ActiveConnectionIDLimit)
	return nil
}

// handleNew stores an ID the peer issued in NEW_CONNECTION_ID frame f,
// retires what its Retire Prior To asks for, and switches to another ID if
// ours was retired (routing its reset token to c on t). wake says a
// RETIRE_CONNECTION_ID is to be sent.
func (s *cidState) handleNew(f *wire.Frame, t *Transport, c *Conn) (wake bool, err error) {
	r := s.remote
	if r == nil {
		return false, qerr.NewProtocolViolation(uint64(f.Type), "NEW_CONNECTION_ID before transport parameters")
	}
	if err := r.HandleNewConnectionID(f.SequenceNumber, f.RetirePriorTo, f.ConnectionID, f.StatelessResetToken); err != nil {
		return false, withFrameType(err, uint64(f.Type))
	}
	if cur := r.Current(); !cur.Equal(s.dest) {
		s.dest = cur.Bytes()
		s.routeResetToken(t, c)
	}
	return r.HasPendingRetireConnectionID(), nil
}

// routeResetToken has Transport t route datagrams ending in the reset
// token of the peer ID we send with to c (a stateless reset carries no
// connection ID of ours), instead of the previous ID's token.
func (s *cidState) routeResetToken(t *Transport, c *Conn) {
	tok, ok := s.remote.CurrentResetToken()
	if s.hasRoutedToken && (!ok || tok != s.routedToken) {
		t.removeResetToken(s.routedToken, c)
		s.hasRoutedToken = false
	}
	if ok && !s.hasRoutedToken {
		t.addResetToken(tok, c)
		s.routedToken, s.hasRoutedToken = tok, true
	}
}

// handleRetire forgets one of our IDs (RETIRE_CONNECTION_ID frame f) and
// issues a replacement; wake says a NEW_CONNECTION_ID is to be sent.
func (s *cidState) handleRetire(f *wire.Frame) (wake bool, err error) {
	err = s.local.HandleRetireConnectionID(f.SequenceNumber, s.rxDCID)
	var te *qerr.TransportError
	if errors.As(err, &te) {
		return false, withFrameType(err, uint64(f.Type))
	}
	// Any other error means the replacement could not be routed (the
	// Transport is closing): the retirement itself is done.
	return s.local.HasPendingNewConnectionID(), nil
}

// withFrameType fills in the frame type of a transport error from connid.
func withFrameType(err error, ft uint64) error {
	var te *qerr.TransportError
	if errors.As(err, &te) {
		return qerr.NewTransportError(te.Code, ft, te.Reason)
	}
	return qerr.NewTransportError(qerr.InternalError, ft, err.Error())
}

// appendCIDFrames appends the NEW_CONNECTION_ID and RETIRE_CONNECTION_ID
// frames that fit.
func (c *Conn) appendCIDFrames(b []byte, maxEnd int, p *sentPacket) []byte {
	var ok bool
	for c.cids.local != nil && c.cids.local.HasPendingNewConnectionID() {
		n, _ := c.cids.local.PopNewConnectionID()
		f := wire.Frame{
			Type:                wire.FrameTypeNewConnectionID,
			SequenceNumber:      n.SequenceNumber,
			RetirePriorTo:       n.RetirePriorTo,
			ConnectionID:        n.ConnectionID.Bytes(),
			StatelessResetToken: n.StatelessResetToken,
		}
		if b, ok = appendIfFits(b, maxEnd, &f); !ok {
			c.cids.local.OnNewConnectionIDLost(n.SequenceNumber) // next packet
			break
		}
		p.frames = append(p.frames, sentFrame{kind: sfNewCID, id: n.SequenceNumber})
	}
	for c.cids.remote != nil && c.cids.remote.HasPendingRetireConnectionID() {
		if wire.FrameLen(&wire.Frame{Type: wire.FrameTypeRetireConnectionID, SequenceNumber: 1 << 62}) > maxEnd-len(b) {
			break
		}
		seq, _ := c.cids.remote.PopRetireConnectionID()
		b = wire.AppendFrame(b, &wire.Frame{Type: wire.FrameTypeRetireConnectionID, SequenceNumber: seq})
		p.frames = append(p.frames, sentFrame{kind: sfRetireCID, id: seq})
	}
	return b
}

// isStatelessReset reports whether tail, the last 16 bytes of an
// undecryptable short-header datagram, is the reset token of a peer ID we
// have sent with and not retired.
func (s *cidState) isStatelessReset(tail []byte) bool {
	if s.remote == nil {
		return false
	}
	// The detector looks at a whole datagram; only its last 16 bytes count.
	var d [connid.MinStatelessResetSize]byte
	copy(d[len(d)-connid.TokenLen:], tail)
	return s.remote.IsStatelessReset(d[:])
}

// switchPeer moves to an unused connection ID of the peer, routing its
// reset token to c on t.
func (s *cidState) switchPeer(t *Transport, c *Conn) {
	r := s.remote
	if r == nil {
		return
	}
	_, seq, ok := r.NextUnused()
	if !ok || r.SwitchTo(seq) != nil {
		return
	}
	s.dest = r.Current().Bytes()
	s.routeResetToken(t, c)
}
