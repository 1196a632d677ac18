package quic

import (
	"net"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// A listener's limits (Config.MaxConnections, MaxHandshakes,
// AcceptBacklog) are checked on every client Initial that would create a
// connection, before the AddressPolicy and before any state exists; a
// client beyond one gets a stateless CONNECTION_REFUSED. An admitted
// connection holds a connection slot until it is released, a handshake
// slot until its handshake completes, and, unless a token validated its
// client's address, a place among the unvalidated connections until a
// Handshake packet from the client decrypts: that count and its estimated
// memory are the load an AddressPolicy sees, for Listener and
// EarlyListener alike (an EarlyListener hands connections out at 0.5-RTT,
// long before the client proved anything). With Config.Admission the
// slots are counted per source prefix too (listener_admission.go).

// admission is a connection's client address validation and what it
// holds of its listener's limits. Guarded by Conn.mu (newConn and admit
// set it before the connection's goroutine starts); the listener's totals
// it is counted in are serverLoad, under baseServer.mu.
type admission struct {
	// validated: the client's address is proven (a token, or a Handshake
	// packet from it); validatedBy is the token kind that did it
	// (ConnectionState.ValidatedBy).
	validated   bool
	validatedBy TokenKind
	// bytesRecv and bytesSent count whole datagrams, for the 3x
	// anti-amplification limit before validation (RFC 9000 section 8.1).
	bytesRecv uint64
	bytesSent uint64
	// A server connection's connection slot, handshake slot, and place
	// among the unvalidated connections with its estimated cost.
	holdsConnSlot      bool
	holdsHandshakeSlot bool
	// holdsClosingSlot: the connection is closing or draining and counts
	// among the listener's closing connections instead of its connections
	// (admission.closed).
	holdsClosingSlot bool
	holdsUnvalidated bool
	unvalidatedCost  int64
	// prefix is the entry of the client's source prefix that the slots
	// are counted in too (Config.Admission), nil without.
	prefix *prefixEntry
}

// serverLoad is what a listener's connections hold of its limits; guarded
// by baseServer.mu.
type serverLoad struct {
	conns       int
	handshaking int
	// closing counts connections in their closing or draining period
	// that gave their connection slot back (admission.closed); at most
	// MaxConnections.
	closing     int
	unvalidated int
	// unvalidatedBytes sums the unvalidated connections' unvalidatedCost.
	unvalidatedBytes int64
}

// unvalidatedBaseCost is the memory a server connection holds from its
// first Initial on besides its buffers: connection, TLS and recovery
// state, the connection's goroutine and crypto/tls's handshake goroutine.
// TestMemoryFigures measures about 80 KiB per unvalidated connection in
// all, 32 KiB of it the two buffer chunks holding the server's first
// flight, which unvalidatedCost adds.
const unvalidatedBaseCost = 48 << 10

// acceptQueueCap is the capacity of the accept queue: the backlog plus
// room for every handshake admitted while the backlog had space, so a
// completed handshake always finds a place (up to a sane bound when
// MaxHandshakes is unlimited; beyond it RefusedAcceptQueueFull counts).
func acceptQueueCap(conf *Config) int {
	return conf.AcceptBacklog + min(conf.MaxHandshakes, 4096)
}

// admit gives c, before its goroutine starts, a connection slot, a
// handshake slot and, unless validated, a place among the unvalidated;
// with Config.Admission, in the share of remote's prefix too.
func (s *baseServer) admit(c *Conn, remote net.Addr, validated bool) {
	var now time.Time
	if s.prefixes != nil {
		now = time.Now()
	}
	s.mu.Lock()
	if s.pending == nil {
		s.pending = make(map[*Conn]struct{})
	}
	s.pending[c] = struct{}{}
	s.load.conns++
	s.load.handshaking++
	c.admit.holdsConnSlot, c.admit.holdsHandshakeSlot = true, true
	if a := s.prefixes; a != nil {
		c.admit.prefix = a.admit(a.prefixOf(addrPortOf(remote)), now)
	}
	if !validated {
		c.admit.holdsUnvalidated = true
		c.admit.unvalidatedCost = unvalidatedBaseCost
		s.load.unvalidated++
		s.load.unvalidatedBytes += c.admit.unvalidatedCost
	}
	s.mu.Unlock()
	if !validated && s.tokens != nil {
		s.tokens.m.handshakes.Inc()
	}
}

// unvalidatedLoad returns the unvalidated connections and their estimated
// memory: the load an AddressPolicy sees.
func (s *baseServer) unvalidatedLoad() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load.unvalidated, s.load.unvalidatedBytes
}

// handshakeSlotDone gives back the handshake slot held of listener s
// (handshake complete).
func (a *admission) handshakeSlotDone(s *baseServer) {
	if !a.holdsHandshakeSlot {
		return
	}
	a.holdsHandshakeSlot = false
	s.mu.Lock()
	s.load.handshaking--
	if e := a.prefix; e != nil {
		s.prefixes.handshakeDone(e)
	}
	s.mu.Unlock()
}

// addressValidated records that the client proved its address: it leaves
// listener s's unvalidated connections.
func (a *admission) addressValidated(s *baseServer) {
	a.validated = true
	a.leaveUnvalidated(s)
}

// leaveUnvalidated gives back the place held among listener s's
// unvalidated connections.
func (a *admission) leaveUnvalidated(s *baseServer) {
	if !a.holdsUnvalidated {
		return
	}
	a.holdsUnvalidated = false
	s.mu.Lock()
	s.load.unvalidated--
	s.load.unvalidatedBytes -= a.unvalidatedCost
	s.mu.Unlock()
	a.unvalidatedCost = 0
	if s.tokens != nil {
		s.tokens.m.handshakes.Dec()
	}
}

// release gives back everything connection c holds of its listener s's
// limits (none for a client: s nil), when it is torn down (or failed to
// start).
func (a *admission) release(s *baseServer, c *Conn) {
	if s == nil {
		return
	}
	s.notPending(c)
	a.handshakeSlotDone(s)
	a.leaveUnvalidated(s)
	if a.holdsClosingSlot {
		a.holdsClosingSlot = false
		s.mu.Lock()
		s.load.closing--
		s.mu.Unlock()
	}
	if a.holdsConnSlot {
		a.holdsConnSlot = false
		s.mu.Lock()
		s.load.conns--
		if e := a.prefix; e != nil {
			s.prefixes.connDone(e)
			a.prefix = nil
		}
		s.mu.Unlock()
	}
}

// closed gives back, when its connection starts closing or draining, the
// handshake slot and the connection slot (and its prefix's share of both)
// held of listener s (nil for a client): the connection will never carry
// data again, and a closing connection
// only answers packets with its CONNECTION_CLOSE (RFC 9000 section 10.2),
// so holding a slot for its three PTOs would refuse new clients for
// connections that have ended. It counts among the listener's closing
// connections instead, a bound of its own (MaxConnections of them); with
// that full it keeps its connection slot until teardown, as before.
// Its place among the unvalidated stays until teardown: its memory does.
func (a *admission) closed(s *baseServer) {
	if s == nil || !a.holdsConnSlot {
		return
	}
	a.handshakeSlotDone(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.load.closing >= s.config.MaxConnections {
		return
	}
	s.load.closing++
	a.holdsClosingSlot = true
	a.holdsConnSlot = false
	s.load.conns--
	if e := a.prefix; e != nil {
		s.prefixes.connDone(e)
		a.prefix = nil
	}
}

// unvalidatedCost estimates the memory a connection holds for a client
// that has not proven its address: the base cost plus the chunks of its
// handshake buffers (in spaces) and the undecryptable packets it keeps
// for later keys.
func unvalidatedCost(spaces *[3]pnSpace, undecryptable int) int64 {
	n := int64(unvalidatedBaseCost)
	for i := range spaces[:spaceApp] {
		sp := &spaces[i]
		n += int64(sp.crypto.Footprint())
		if sp.cryptoIn != nil {
			n += int64(sp.cryptoIn.Footprint())
		}
	}
	return n + int64(undecryptable)*receiveBufferSize
}

// updateCost brings an unvalidated connection's cost in listener s's
// totals up to date after a batch of received datagrams.
func (a *admission) updateCost(s *baseServer, spaces *[3]pnSpace, undecryptable int) {
	if !a.holdsUnvalidated {
		return
	}
	cost := unvalidatedCost(spaces, undecryptable)
	if cost == a.unvalidatedCost {
		return
	}
	s.mu.Lock()
	s.load.unvalidatedBytes += cost - a.unvalidatedCost
	s.mu.Unlock()
	a.unvalidatedCost = cost
}

// sendStatelessClose ends a client's connection attempt without creating
// state: an Initial with CONNECTION_CLOSE carrying code, protected with the
// Initial keys of the client's DCID (RFC 9000 sections 10.2.3 and 17.2.2),
// built in buf. The packet is far smaller than the client's 1200 bytes, so
// it amplifies nothing.
func (s *baseServer) sendStatelessClose(hdr *wire.LongHeader, to *receivedPacket, code TransportErrorCode, buf []byte) {
	b, err := s.responder.AppendClose(buf, hdr, &qerr.TransportError{Code: qerr.TransportErrorCode(code)})
	if err != nil {
		return
	}
	s.t.replyTo(to, b)
}
