package quic

import (
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Datagram packetization layer path MTU discovery (RFC 9000 section 14.3,
// RFC 8899): every connection starts at 1200-byte datagrams; once the
// handshake is confirmed it sends padded PING probes of larger sizes in
// their own datagrams, and each acknowledged probe raises the datagram
// size. A size fails when its probe is lost twice in a row: a single loss
// may be congestion, and taking it for the path's limit would end the
// search well below it (RFC 8899 also retries a probe before concluding,
// MAX_PROBES). A failed size only lowers the upper bound of the search (it
// is no congestion signal). A path that starts losing every large datagram (a
// black hole after a route change) is noticed when a PTO probe, sent at
// 1200 bytes, gets through while the large datagrams before it are lost:
// the size falls back to 1200 and the search starts over, first retesting
// the size that failed (it may have been congestion after all).

const (
	// maxProbeSize is the largest datagram we probe for: a 1500-byte
	// Ethernet MTU less IPv6 and UDP headers, so it fits either family.
	maxProbeSize = 1452
	// mtuSearchDone ends the search once the bounds are this close.
	mtuSearchDone = 20
	// blackHoleLosses large datagrams lost with none of them acknowledged
	// in between, and a PTO probe acknowledged, make a black hole.
	blackHoleLosses = 8
)

// mtuDiscovery is the search state of one connection.
type mtuDiscovery struct {
	enabled bool
	started bool
	// The search interval: low is the size in use (acknowledged), high the
	// smallest size known to fail plus nothing, or the cap plus one.
	low, high int
	failed    bool // a size failed: search by halving, not at the cap
	inFlight  int  // size of the outstanding probe, 0 if none
	// lostOnce is the size whose probe was lost once, to probe again
	// before it counts as failed; 0 if none.
	lostOnce  int
	notBefore time.Time
	// largeLost counts datagrams above the base size lost since the last
	// acknowledged one, and ptoProbeAcked says a PTO probe got through
	// since then (black hole detection).
	largeLost     int
	ptoProbeAcked bool
}

// mtuEnabled reports whether a connection of conf on t may probe: the
// socket must not fragment (or probes would succeed through
// fragmentation), and the application did not turn discovery off.
func mtuEnabled(conf *Config, t *Transport) bool {
	return !conf.DisablePathMTUDiscovery && t.df
}

// start starts the search once the handshake is confirmed, from the base
// size up to the peer's max_udp_payload_size. The first probe waits one
// PTO: a short exchange (a few requests) is over by then and never pays
// for a probe, and a long one loses nothing it would notice.
func (m *mtuDiscovery) start(now time.Time, peer *wire.TransportParameters, enabled bool, base int, pto time.Duration) {
	if m.started || peer == nil || !enabled {
		return
	}
	limit := int(min(peer.MaxUDPPayloadSize, maxProbeSize))
	*m = mtuDiscovery{enabled: limit > base, started: true, low: base, high: limit + 1,
		notBefore: now.Add(pto)}
}

// mtuProbeSize returns the size of the probe to send now, or 0.
func (c *Conn) mtuProbeSize(now time.Time) int {
	m := &c.mtu
	if !m.enabled || m.inFlight != 0 || m.high-m.low <= mtuSearchDone || now.Before(m.notBefore) ||
		c.path.migration.validating || !c.hs.confirmed {
		return 0
	}
	if m.lostOnce != 0 {
		return m.lostOnce
	}
	if !m.failed {
		return m.high - 1 // most paths carry the full size: try it first
	}
	return (m.low + m.high) / 2
}

// sendMTUProbe builds the probe datagram (a PING padded to size) into
// send.pending.
func (c *Conn) sendMTUProbe(now time.Time, size int) bool {
	d := c.buildPathDatagram(now, c.cids.dest, []byte{byte(wire.FrameTypePing)}, size, true)
	if d == nil {
		return false
	}
	c.mtu.inFlight = size
	c.send.pending = append(c.send.pending, outDatagram{b: d, pooled: true})
	return true
}

// deadline is when a waiting probe may go, so that an idle connection
// wakes up for it; zero when none waits.
func (m *mtuDiscovery) deadline(now time.Time) time.Time {
	if !m.enabled || m.inFlight != 0 || m.high-m.low <= mtuSearchDone || !now.Before(m.notBefore) {
		return time.Time{}
	}
	return m.notBefore
}

// onProbeAcked raises the datagram size to the acknowledged probe's.
func (m *mtuDiscovery) onProbeAcked(size int, send *sendState, loss *lossState, trace *connTracer) {
	if size == m.inFlight {
		m.inFlight = 0
	}
	if size >= m.lostOnce {
		m.lostOnce = 0
	}
	if size <= m.low {
		return
	}
	m.low = size
	m.largeLost = 0
	send.setMaxDatagram(size, loss)
	if trace != nil {
		trace.mtuUpdated(size, m.high-m.low <= mtuSearchDone)
	}
}

// onProbeLost notes a lost probe; the second loss in a row of a size
// narrows the search: the path does not carry it.
func (m *mtuDiscovery) onProbeLost(size int, now time.Time, pto time.Duration, trace *connTracer) {
	if size == m.inFlight {
		m.inFlight = 0
	}
	m.notBefore = now.Add(pto)
	if size <= m.low || size >= m.high {
		return
	}
	if size != m.lostOnce {
		m.lostOnce = size // once may be congestion: probe it again
		return
	}
	m.lostOnce = 0
	m.high = size
	m.failed = true
	if trace != nil && m.high-m.low <= mtuSearchDone {
		trace.mtuUpdated(m.low, true)
	}
}

// onDatagramFate feeds black hole detection with the fate of a lost or
// acknowledged packet of size bytes that was not a probe; base is the
// size to fall back to.
func (m *mtuDiscovery) onDatagramFate(size int, lost bool, now time.Time, base int, send *sendState, loss *lossState) {
	if size <= base || !m.started {
		return
	}
	if !lost {
		m.largeLost = 0
		m.ptoProbeAcked = false
		return
	}
	m.largeLost++
	if m.largeLost < blackHoleLosses || !m.ptoProbeAcked || send.maxDatagram <= base {
		return
	}
	// Large datagrams vanish while small ones pass: back to the base
	// size, and search again from the size that stopped working.
	m.high = send.maxDatagram + 1
	m.low = base
	m.failed = false
	m.lostOnce = 0
	m.largeLost = 0
	m.ptoProbeAcked = false
	m.notBefore = now.Add(loss.pto())
	send.setMaxDatagram(base, loss)
}

// onPTOProbeAcked records that a PTO probe, at most the base size, was
// acknowledged while datagrams were larger (maxDatagram).
func (m *mtuDiscovery) onPTOProbeAcked(maxDatagram, base int) {
	if maxDatagram > base {
		m.ptoProbeAcked = true
	}
}

// reset goes back to the base size on a new path and forgets the search;
// the caller starts it again if the handshake is confirmed.
func (m *mtuDiscovery) reset(base int, send *sendState, loss *lossState) {
	if send.maxDatagram != base {
		send.setMaxDatagram(base, loss)
	}
	*m = mtuDiscovery{}
}

// restart goes back to the base size on a new path and, once the
// handshake is confirmed, searches again (start's arguments).
func (m *mtuDiscovery) restart(now time.Time, base int, send *sendState, loss *lossState, confirmed bool, peer *wire.TransportParameters, enabled bool) {
	m.reset(base, send, loss)
	if confirmed {
		m.start(now, peer, enabled, base, loss.pto())
	}
}

// setMaxDatagram sets the size of the datagrams built, which the
// congestion controller and the pacer count in.
func (s *sendState) setMaxDatagram(size int, loss *lossState) {
	s.maxDatagram = size
	loss.rec.SetMaxDatagramSize(size)
	loss.pacer.SetMaxDatagramSize(size)
}
