package quic

import (
	"math"
	"net/netip"
	"time"
	"unsafe"

	"github.com/turboretry/turboretry/internal/wire"
)

// Admission by client source prefix (Config.Admission). Retry proves only
// that a client owns its address; hosts that really own theirs (a botnet,
// a block of addresses one party holds) can take every slot of the
// listener's global limits. Admission groups clients by source prefix and,
// while the listener is under pressure, holds each prefix to a fair share
// of the handshake and connection limits, limits the rate of new
// connections per prefix, and keeps a part of the limits for returning
// clients (a valid NEW_TOKEN token). The fair share is
//
//	share(limit, n) = max(MinShare, limit / (n + 1))
//
// where n counts the prefixes holding some of that resource, the asking
// prefix included: the +1 keeps room for a prefix not seen yet, so one
// prefix alone never holds more than half of a limit, two hold at most a
// third each, and so on. A limit is under pressure once half of it is in
// use; below that, any prefix may take what is free. Shares are checked at
// admission only: a prefix that got more while there was room keeps it
// until its connections end (nothing is preempted).

// AdmissionConfig configures a listener's admission by client source
// prefix (Config.Admission). The zero value gives the defaults documented
// on each field.
type AdmissionConfig struct {
	// IPv4PrefixLen and IPv6PrefixLen are the lengths of the source
	// prefixes clients are grouped by: 0 means 24 and 56 (a typical
	// customer assignment; one host of an IPv6 attacker holds a /64 or
	// more). An IPv4-mapped IPv6 address counts as IPv4.
	IPv4PrefixLen, IPv6PrefixLen int
	// MinShare is the floor of a prefix's fair share: under pressure a
	// prefix may still hold this many handshakes and this many
	// connections (the global limits permitting). 0 means 2.
	MinShare int
	// NewConnectionRate is how many new connections per second a prefix
	// may open (a token bucket's refill rate), at any load; past it an
	// Initial gets a stateless CONNECTION_REFUSED (reason prefix_rate).
	// NewConnectionBurst is the bucket's size: 0 means twice the rate
	// (at least 1). A rate of 0 means no rate limit.
	NewConnectionRate  float64
	NewConnectionBurst int
	// ReturningReserve is the fraction of MaxConnections and
	// MaxHandshakes that only clients presenting a valid NEW_TOKEN token
	// (returning clients) may take: others are refused once the rest is
	// used. Returning clients are held to their prefix's fair share too,
	// so a prefix farming tokens gains no more than its share. 0 means
	// 1/8; a negative value reserves nothing.
	ReturningReserve float64
	// MaxPrefixes bounds the prefixes tracked at once (about 140 bytes
	// each). When it is reached, the least recently seen prefix that holds
	// nothing is forgotten; when every tracked prefix holds something, the
	// prefixes not tracked share one entry (one fair share together).
	// 0 means 4096.
	MaxPrefixes int
}

const (
	defaultAdmissionMinShare    = 2
	defaultAdmissionReserve     = 1.0 / 8
	defaultAdmissionMaxPrefixes = 4096
	// topRefusedPrefixes is how many prefixes TopRefusedPrefixes keeps.
	topRefusedPrefixes = 8
)

// PrefixRefusals is a client source prefix and how many of its connection
// attempts the listener's admission refused. The zero Prefix stands for
// the prefixes the table had no room to track on their own.
type PrefixRefusals struct {
	Prefix  netip.Prefix
	Refused uint64
}

// prefixEntry is what admission knows of one source prefix. A prefix
// that holds a handshake or a connection stays in the table; the
// connections holding it point at it (admission.prefix).
type prefixEntry struct {
	prefix     netip.Prefix
	handshakes int
	conns      int
	// tokens is the rate bucket's content as of refilled (time since the
	// table's epoch).
	tokens   float64
	refilled time.Duration
	refused  uint64
	// An idle entry (holding nothing) is on the table's idle list, most
	// recently seen first; a busy one is on no list.
	prev, next *prefixEntry
}

// prefixEntryCost is the memory one tracked prefix holds: the entry,
// rounded up to its allocation size class (a multiple of 16 at this
// size), and its map slot (key and pointer, a control byte, at the map's
// 7/8 load).
const prefixEntryCost = int64(unsafe.Sizeof(prefixEntry{})+15)&^15 + int64(unsafe.Sizeof(netip.Prefix{})+8)*8/7 + 1

// prefixAdmission is a listener's admission state; guarded by
// baseServer.mu, with the serverLoad it shares out.
type prefixAdmission struct {
	v4Bits, v6Bits int
	minShare       int
	rate, burst    float64 // rate 0: no rate limit
	reserve        float64
	maxPrefixes    int

	epoch   time.Time
	entries map[netip.Prefix]*prefixEntry
	// overflow is the shared entry of the prefixes not tracked on their
	// own; it is never in entries nor on the idle list.
	overflow prefixEntry
	// idle is the sentinel of the idle entries' list.
	idle prefixEntry
	// activeHandshakes and activeConns count the entries (overflow
	// included) holding a handshake, and a connection.
	activeHandshakes, activeConns int
	// top is the prefixes with the most refusals, most first, up to
	// topLen of them (approximate: see countRefusal).
	top    [topRefusedPrefixes]PrefixRefusals
	topLen int
}

// newPrefixAdmission returns the admission state of cfg with the
// defaults applied, nil when cfg is nil (admission off).
func newPrefixAdmission(cfg *AdmissionConfig) *prefixAdmission {
	if cfg == nil {
		return nil
	}
	a := &prefixAdmission{
		v4Bits:      orDefault(cfg.IPv4PrefixLen, 24),
		v6Bits:      orDefault(cfg.IPv6PrefixLen, 56),
		minShare:    orDefault(cfg.MinShare, defaultAdmissionMinShare),
		maxPrefixes: orDefault(cfg.MaxPrefixes, defaultAdmissionMaxPrefixes),
		reserve:     cfg.ReturningReserve,
		epoch:       time.Now(),
		entries:     make(map[netip.Prefix]*prefixEntry),
	}
	a.v4Bits, a.v6Bits = min(max(a.v4Bits, 0), 32), min(max(a.v6Bits, 0), 128)
	switch {
	case a.reserve == 0:
		a.reserve = defaultAdmissionReserve
	case a.reserve < 0 || math.IsNaN(a.reserve):
		a.reserve = 0
	}
	a.reserve = min(a.reserve, 1)
	if cfg.NewConnectionRate > 0 && !math.IsInf(cfg.NewConnectionRate, 0) {
		a.rate = cfg.NewConnectionRate
		a.burst = float64(cfg.NewConnectionBurst)
		if a.burst <= 0 {
			a.burst = max(1, math.Ceil(2*a.rate))
		}
	}
	a.idle.next, a.idle.prev = &a.idle, &a.idle
	a.overflow.tokens = a.burst
	return a
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// prefixOf returns the source prefix from belongs to; the zero Prefix
// when from is not valid (no IP address: all such clients share one entry).
func (a *prefixAdmission) prefixOf(from netip.AddrPort) netip.Prefix {
	addr := from.Addr()
	bits := a.v6Bits
	if addr.Is4() {
		bits = a.v4Bits
	}
	p, err := addr.WithZone("").Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// reserved returns how much of limit only returning clients may take.
func (a *prefixAdmission) reserved(limit int) int {
	if limit == math.MaxInt {
		return 0 // no limit, nothing to reserve
	}
	return int(float64(limit) * a.reserve)
}

// fairShare is a prefix's share of limit while n prefixes (the asking
// one included) hold some of it.
func fairShare(limit, n, floor int) int {
	return max(floor, limit/(n+1))
}

// underPressure reports whether used is at least half of limit.
func underPressure(used, limit int) bool {
	return used >= limit-limit/2
}

// find returns p's entry, nil if p is not tracked. Seeing an idle entry
// makes it the most recent.
func (a *prefixAdmission) find(p netip.Prefix) *prefixEntry {
	e := a.entries[p]
	if e != nil && e.prev != nil {
		a.unlinkIdle(e)
		a.pushIdle(e)
	}
	return e
}

// lookup returns p's entry, making one if p is new: in a free place, in
// the place of the least recently seen idle entry when the table is
// full, or the shared overflow entry when every entry is busy. Only an
// admitted connection makes an entry: Initials that are refused, or
// answered with a Retry (spoofed ones among them), cannot churn the
// table and reset a tracked prefix's rate bucket.
func (a *prefixAdmission) lookup(p netip.Prefix) *prefixEntry {
	if e := a.find(p); e != nil {
		return e
	}
	var e *prefixEntry
	switch {
	case len(a.entries) < a.maxPrefixes:
		e = &prefixEntry{}
	case a.idle.prev != &a.idle:
		// Reuse the least recently seen idle entry: a spray of prefixes
		// costs no allocation once the table is full.
		e = a.idle.prev
		a.unlinkIdle(e)
		delete(a.entries, e.prefix)
		*e = prefixEntry{}
	default:
		return &a.overflow
	}
	e.prefix = p
	e.tokens = a.burst
	a.entries[p] = e
	a.pushIdle(e)
	return e
}

func (a *prefixAdmission) pushIdle(e *prefixEntry) {
	e.prev, e.next = &a.idle, a.idle.next
	a.idle.next.prev = e
	a.idle.next = e
}

func (a *prefixAdmission) unlinkIdle(e *prefixEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// refill brings e's rate bucket to now.
func (a *prefixAdmission) refill(e *prefixEntry, now time.Time) {
	at := now.Sub(a.epoch)
	if at > e.refilled {
		e.tokens = min(a.burst, e.tokens+a.rate*(at-e.refilled).Seconds())
	}
	e.refilled = at
}

// check decides whether a client from prefix p may start a connection
// given the listener's load and limits (the global limits are checked
// already; a returning client's prefix share is the same as anyone's). It
// consumes nothing.
func (a *prefixAdmission) check(p netip.Prefix, load *serverLoad, conf *Config, now time.Time) (RefusalReason, bool) {
	e := a.find(p)
	if e == nil {
		if len(a.entries) < a.maxPrefixes || a.idle.prev != &a.idle {
			// A prefix that holds nothing, with a full rate bucket: any
			// share is at least 1.
			return 0, false
		}
		e = &a.overflow // where admit would count it
	}
	if a.rate > 0 {
		a.refill(e, now)
		if e.tokens < 1 {
			return RefusedPrefixRate, true
		}
	}
	if underPressure(load.handshaking, conf.MaxHandshakes) {
		n := a.activeHandshakes
		if e.handshakes == 0 {
			n++
		}
		if e.handshakes >= fairShare(conf.MaxHandshakes, n, a.minShare) {
			return RefusedPrefixHandshakes, true
		}
	}
	if underPressure(load.conns, conf.MaxConnections) {
		n := a.activeConns
		if e.conns == 0 {
			n++
		}
		if e.conns >= fairShare(conf.MaxConnections, n, a.minShare) {
			return RefusedPrefixConnections, true
		}
	}
	return 0, false
}

// admit counts a new connection from prefix p: a handshake, a connection
// and a token of its rate bucket. It returns the entry the connection
// holds until release.
func (a *prefixAdmission) admit(p netip.Prefix, now time.Time) *prefixEntry {
	e := a.lookup(p)
	if a.rate > 0 {
		a.refill(e, now)
		e.tokens = max(0, e.tokens-1)
	}
	if e.prev != nil {
		a.unlinkIdle(e)
	}
	if e.handshakes == 0 {
		a.activeHandshakes++
	}
	if e.conns == 0 {
		a.activeConns++
	}
	e.handshakes++
	e.conns++
	return e
}

// handshakeDone gives back e's handshake.
func (a *prefixAdmission) handshakeDone(e *prefixEntry) {
	if e.handshakes--; e.handshakes == 0 {
		a.activeHandshakes--
	}
	a.maybeIdle(e)
}

// connDone gives back e's connection.
func (a *prefixAdmission) connDone(e *prefixEntry) {
	if e.conns--; e.conns == 0 {
		a.activeConns--
	}
	a.maybeIdle(e)
}

// maybeIdle puts e on the idle list once it holds nothing.
func (a *prefixAdmission) maybeIdle(e *prefixEntry) {
	if e.handshakes == 0 && e.conns == 0 && e != &a.overflow && e.prev == nil {
		a.pushIdle(e)
	}
}

// countRefusal counts a refusal of a client from p in the top prefixes.
// The list is kept as a "space saving" top-k: a prefix in it counts
// every refusal; one outside enters in the place of the least refused
// member once its own count (since its entry was made; 1 for a prefix
// not tracked) passes that member's.
func (a *prefixAdmission) countRefusal(p netip.Prefix) {
	n := uint64(1)
	if e := a.find(p); e != nil {
		e.refused++
		n = e.refused
	}
	for i := range a.topLen {
		if a.top[i].Prefix == p {
			a.top[i].Refused++
			a.bubbleUp(i)
			return
		}
	}
	switch {
	case a.topLen < len(a.top):
		a.top[a.topLen] = PrefixRefusals{Prefix: p, Refused: n}
		a.topLen++
	case n > a.top[a.topLen-1].Refused:
		a.top[a.topLen-1] = PrefixRefusals{Prefix: p, Refused: n}
	default:
		return
	}
	a.bubbleUp(a.topLen - 1)
}

// bubbleUp moves top[i] ahead of the members with fewer refusals.
func (a *prefixAdmission) bubbleUp(i int) {
	for ; i > 0 && a.top[i].Refused > a.top[i-1].Refused; i-- {
		a.top[i], a.top[i-1] = a.top[i-1], a.top[i]
	}
}

// tableBytes is the memory the tracked prefixes hold.
func (a *prefixAdmission) tableBytes() int64 {
	return int64(len(a.entries)) * prefixEntryCost
}

// checkAdmission decides whether a client at remote may start a
// connection: the listener's global limits, less the part reserved for
// returning clients unless it is one, then its prefix's share and rate
// (when Config.Admission is set). It counts nothing: refuseInitial does.
func (s *baseServer) checkAdmission(from netip.AddrPort, returning bool) (RefusalReason, bool) {
	a := s.prefixes
	var now time.Time
	if a != nil && a.rate > 0 {
		now = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	maxConns, maxHandshakes := s.config.MaxConnections, s.config.MaxHandshakes
	if a != nil && !returning {
		maxConns -= a.reserved(maxConns)
		maxHandshakes -= a.reserved(maxHandshakes)
	}
	switch {
	case s.load.conns >= maxConns:
		return RefusedConnectionCap, true
	case s.load.handshaking >= maxHandshakes:
		return RefusedHandshakeSlots, true
	case len(s.acceptCh) >= s.config.AcceptBacklog:
		return RefusedBacklogFull, true
	case a != nil:
		return a.check(a.prefixOf(from), &s.load, s.config, now)
	}
	return 0, false
}

// refuseInitial refuses a client's connection attempt for r with a
// stateless CONNECTION_REFUSED (built in buf, or the one sent for an
// earlier Initial of the same attempt: refusalCloses), counting it, and
// with Config.Admission in its prefix's refusals too.
func (s *baseServer) refuseInitial(r RefusalReason, hdr *wire.LongHeader, to *receivedPacket, buf []byte) {
	s.t.countRefused(r)
	if a := s.prefixes; a != nil {
		s.mu.Lock()
		a.countRefusal(a.prefixOf(to.sender()))
		s.mu.Unlock()
	}
	b, err := s.refusals.appendClose(buf, s.responder, hdr, ConnectionRefused)
	if err != nil {
		return
	}
	s.t.replyTo(to, b)
}

// TopRefusedPrefixes returns up to 8 client source prefixes whose
// connection attempts the listener's admission (Config.Admission) refused
// most, most first: exact for a prefix that stayed in the list, a lower
// bound for one that entered it late. Nil without a listener or admission.
func (t *Transport) TopRefusedPrefixes() []PrefixRefusals {
	t.mu.Lock()
	s := t.server
	t.mu.Unlock()
	if s == nil || s.prefixes == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.prefixes
	return append([]PrefixRefusals(nil), a.top[:a.topLen]...)
}
