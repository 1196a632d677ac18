package quic

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Client-initiated connection migration (RFC 9000 section 9.2), with
// quic-go's API: AddPath registers a second Transport (another socket),
// Probe validates the path to the server from it, Switch moves the
// connection there.

var (
	// ErrPathClosed is returned by Path methods after the path or its
	// connection closed.
	ErrPathClosed = errors.New("quic: path closed")
	// ErrPathNotValidated is returned by Path.Switch before a Probe
	// succeeded.
	ErrPathNotValidated = errors.New("quic: path not yet validated")
)

// Path is a network path a client connection may migrate to: the same
// server address, reached from the socket of another Transport.
type Path struct {
	c *Conn
	t *Transport
	// remote is the server address the path leads to, when it is not the
	// connection's (a preferred address, preferred_address.go); nil
	// otherwise.
	remote   net.Addr
	remoteAP netip.AddrPort

	// Guarded by c.mu.
	dcid      []byte // the server's connection ID for this path
	dcidSeq   uint64
	switchCID bool // dcid is not the one in use: Switch moves to it
	open      [maxOpenChallenges][8]byte
	nOpen     int
	sendProbe bool
	validated bool
	closed    bool
	// responses are the PATH_RESPONSE data owed for challenges that
	// came on this path while the connection sends on another.
	responses [][8]byte
	// tupleID names the path in Config.Tracer's events (path_tuples.go);
	// tupleLogged: its tuple_assigned event was recorded.
	tupleID     string
	tupleLogged bool

	validatedCh chan struct{} // closed once validated
	closedCh    chan struct{} // closed by Close or when the connection ends
}

// AddPath prepares migrating the connection to t's socket. t must be a
// Transport the connection does not send on, with the same connection ID
// length: a Transport that has not been used yet takes the connection's.
// After a Switch, the Transport the connection was dialed on may be added
// again to move back. The connection's own Transport must stay open: it
// keeps the connection.
// Only a client whose handshake completed may add paths, and not when the
// server sent disable_active_migration.
func (c *Conn) AddPath(t *Transport) (*Path, error) {
	return c.addPath(t, nil)
}

// addPath is AddPath towards remote, or the connection's server address
// when remote is nil. A path to a preferred address (remote set) is
// allowed even when the server disabled active migration (RFC 9000
// section 18.2).
func (c *Conn) addPath(t *Transport, remote net.Addr) (*Path, error) {
	if !c.isClient {
		return nil, errors.New("quic: a server cannot initiate connection migration")
	}
	if t == nil {
		return nil, errors.New("quic: AddPath needs a Transport")
	}
	if err := t.initWithCIDLen(c.t.cidLen); err != nil {
		return nil, err
	}
	if t.cidLen != c.t.cidLen {
		return nil, errors.New("quic: the path's Transport uses another connection ID length")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.close.err != nil || c.close.finished:
		return nil, ErrPathClosed
	case !c.hs.complete || c.hs.peerParams == nil:
		return nil, errors.New("quic: AddPath before the handshake completed")
	case c.hs.peerParams.DisableActiveMigration && remote == nil:
		return nil, errors.New("quic: the server disabled connection migration")
	case t == c.path.sendT:
		return nil, errors.New("quic: AddPath needs a Transport other than the one the connection sends on")
	}
	for _, p := range c.path.extra {
		if p.t == t {
			return p, nil
		}
	}
	if t == c.t {
		// Back to the socket dialed on, which routes the IDs already; its
		// tuple kept the ID "0" when the connection left it.
		p := &Path{c: c, t: t, remote: remote, tupleID: "0", tupleLogged: true, validatedCh: make(chan struct{}), closedCh: make(chan struct{})}
		p.remoteAP, _ = addrPort(remote)
		c.path.extra = append(c.path.extra, p)
		return p, nil
	}
	// Route every ID we issued on the new socket too: the server may
	// answer with any of them.
	ids := make([][]byte, 0, len(c.cids.own)+1)
	if len(c.cids.src) == 0 {
		ids = append(ids, c.cids.src)
	}
	for k := range c.cids.own {
		ids = append(ids, []byte(k))
	}
	for i, id := range ids {
		if !t.addHandler(id, c) {
			for _, r := range ids[:i] {
				t.removeHandler(r, c)
			}
			return nil, errors.New("quic: the path's Transport already routes one of the connection's IDs")
		}
	}
	for _, id := range ids {
		c.out.routed(t, id)
	}
	c.path.added++
	p := &Path{c: c, t: t, remote: remote, tupleID: strconv.Itoa(c.path.added), validatedCh: make(chan struct{}), closedCh: make(chan struct{})}
	p.remoteAP, _ = addrPort(remote)
	c.path.extra = append(c.path.extra, p)
	return p, nil
}

// Probe validates the path: it sends PATH_CHALLENGE frames from the path's
// socket (again with backoff while none is answered) until the server's
// PATH_RESPONSE arrives, ctx ends, or the path or connection closes.
func (p *Path) Probe(ctx context.Context) error {
	c := p.c
	c.mu.Lock()
	if err := p.startProbe(); err != nil {
		c.mu.Unlock()
		return err
	}
	wait := c.loss.pto()
	c.mu.Unlock()
	c.wake()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-p.validatedCh:
			return nil
		case <-p.closedCh:
			return ErrPathClosed
		case <-c.closedCh:
			return ErrPathClosed
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-timer.C:
			c.mu.Lock()
			p.sendProbe = !p.validated && !p.closed
			c.mu.Unlock()
			c.wake()
			wait *= 2
			timer.Reset(wait)
		}
	}
}

// startProbe picks the server connection ID for the path and queues the
// first PATH_CHALLENGE. c.mu is held.
func (p *Path) startProbe() error {
	c := p.c
	if p.closed || c.close.err != nil {
		return ErrPathClosed
	}
	if p.validated {
		return nil
	}
	if p.dcid == nil {
		r := c.cids.remote
		if cid, seq, ok := r.NextUnusedExcept(c.path.reservedCIDs()); ok {
			p.dcid, p.dcidSeq, p.switchCID = cid.Bytes(), seq, true
		} else if len(c.cids.dest) == 0 {
			p.dcid = []byte{} // zero-length IDs: nothing to change
		} else {
			// A new path must not reuse the ID of the current one (RFC
			// 9000 section 9.5).
			return errors.New("quic: the server issued no spare connection ID for a new path")
		}
	}
	p.sendProbe = true
	return nil
}

// reservedCIDs are the sequence numbers of the peer connection IDs
// set aside for paths not switched to yet. c.mu is held.
func (ps *pathState) reservedCIDs() []uint64 {
	var reserved []uint64
	for _, o := range ps.extra {
		if o.switchCID {
			reserved = append(reserved, o.dcidSeq)
		}
	}
	return reserved
}

// Switch moves the connection to the validated path: from now on it sends
// from the path's socket, with the connection ID set aside for the path.
func (p *Path) Switch() error {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case p.closed || c.close.err != nil:
		return ErrPathClosed
	case !p.validated:
		return ErrPathNotValidated
	case c.path.sendT == p.t:
		return nil
	}
	if !p.switchCID && len(c.cids.dest) > 0 {
		// Back on a path used before: the ID it had was retired when the
		// connection left it, and the one in use must not follow it (RFC
		// 9000 section 9.5), so it gets an unused one.
		if cid, seq, ok := c.cids.remote.NextUnusedExcept(c.path.reservedCIDs()); ok {
			p.dcid, p.dcidSeq, p.switchCID = cid.Bytes(), seq, true
		}
	}
	if p.switchCID {
		if err := c.cids.remote.SwitchTo(p.dcidSeq); err == nil {
			c.cids.dest = c.cids.remote.Current().Bytes()
			c.cids.routeResetToken(c.t, c)
		}
		p.switchCID = false
	}
	if c.trace != nil {
		c.trace.switchTo(p, &c.path)
	}
	oldLocal, _ := addrPort(c.path.sendT.Conn.LocalAddr())
	newLocal, _ := addrPort(p.t.Conn.LocalAddr())
	now := time.Now()
	if p.remote != nil {
		// A new server address: a new path in every respect. The
		// connection's goroutine, which reads the peer address without
		// the lock when it writes, takes the address over.
		c.x.pa.switchTo = p
		c.loss.onPathChanged(now)
		c.mtu.restart(now, c.baseDatagram, &c.send, &c.loss, c.hs.confirmed, c.hs.peerParams, mtuEnabled(c.config, c.t))
	} else if oldLocal.Addr().Unmap() != newLocal.Addr().Unmap() || !oldLocal.IsValid() {
		// Only a port change keeps the congestion state (RFC 9000 9.4).
		c.loss.onPathChanged(now)
		c.mtu.restart(now, c.baseDatagram, &c.send, &c.loss, c.hs.confirmed, c.hs.peerParams, mtuEnabled(c.config, c.t))
	} else {
		// Another socket, maybe another interface: the path MTU starts
		// over.
		c.mtu.restart(now, c.baseDatagram, &c.send, &c.loss, c.hs.confirmed, c.hs.peerParams, mtuEnabled(c.config, c.t))
	}
	c.path.sendT = p.t
	c.wake()
	return nil
}

// Close abandons the path. The path the connection sends on cannot be
// closed.
func (p *Path) Close() error {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.closed {
		return nil
	}
	if c.path.sendT == p.t && c.close.err == nil {
		return errors.New("quic: cannot close the path in use")
	}
	p.closeLocked()
	c.path.extra = slices.DeleteFunc(c.path.extra, func(o *Path) bool { return o == p })
	return nil
}

// closeLocked stops routing the connection's IDs on the path. c.mu is held.
func (p *Path) closeLocked() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.closedCh)
	if p.t != p.c.path.sendT && p.t != p.c.t {
		p.t.removeHandlers(p.c)
	}
}

// sendPathProbes builds the due PATH_CHALLENGE datagrams of the client's
// new paths, each sent from its path's socket.
func (c *Conn) sendPathProbes(now time.Time) {
	if c.keys.app == nil || !c.keys.app.CanSend() {
		return
	}
	for _, p := range c.path.extra {
		if (!p.sendProbe && len(p.responses) == 0) || p.closed || p.dcid == nil {
			continue
		}
		var data [8]byte
		var frames [9 * (1 + maxPathResponses)]byte
		fb := frames[:0]
		if p.sendProbe {
			_, _ = rand.Read(data[:])
			fb = wire.AppendFrame(fb, &wire.Frame{Type: wire.FrameTypePathChallenge, PathData: data})
		}
		for _, r := range p.responses {
			fb = wire.AppendFrame(fb, &wire.Frame{Type: wire.FrameTypePathResponse, PathData: r})
		}
		if c.trace != nil {
			c.trace.pathTuple(p, c.path.remote)
		}
		d := c.buildPathDatagram(now, p.dcid, fb, maxPacketSize, false)
		if c.trace != nil {
			c.trace.txTuple = ""
		}
		if d == nil {
			continue
		}
		p.responses = p.responses[:0]
		if p.sendProbe {
			p.sendProbe = false
			if p.nOpen == maxOpenChallenges {
				copy(p.open[:], p.open[1:])
				p.nOpen--
			}
			p.open[p.nOpen] = data
			p.nOpen++
		}
		c.send.pending = append(c.send.pending, outDatagram{b: d, pooled: true, via: p.t, to: p.remote})
	}
}

// validatedBy marks the client path whose PATH_CHALLENGE data answers.
func (ps *pathState) validatedBy(data [8]byte) {
	for _, p := range ps.extra {
		if p.validated || p.closed || !slices.Contains(p.open[:p.nOpen], data) {
			continue
		}
		p.validated = true
		p.sendProbe = false
		close(p.validatedCh)
	}
}

// transportTo is the Transport of the client path that leads to ap, for a
// datagram addressed there; nil for the current one.
func (ps *pathState) transportTo(ap netip.AddrPort) *Transport {
	for _, p := range ps.extra {
		if p.remote != nil && p.remoteAP == ap && !p.closed {
			return p.t
		}
	}
	return nil
}
