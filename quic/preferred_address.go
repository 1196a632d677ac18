package quic

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

// The server's preferred address (RFC 9000 section 9.6). A server with
// Config.PreferredAddress advertises it in its transport parameters with
// the connection ID of sequence 1 and that ID's stateless reset token; the
// listener's socket must receive datagrams sent there. A client with
// Config.MigrateToPreferredAddress, once its handshake is confirmed, opens
// a socket of the preferred address's family, validates the path to it
// with that connection ID (PATH_CHALLENGE, PATH_RESPONSE) and moves the
// connection there; when the path cannot be validated it stays where it is.
//
// Either side, answering a PATH_CHALLENGE that came from a new address (a
// probe), challenges that address in the same datagram; an answer proves
// the address, so a migration there later needs no validation of its own
// (RFC 9000 section 9.3: an address validated before).

// PreferredAddress is the address a server asks its clients to move to
// after the handshake (RFC 9000 section 9.6): one per address family,
// either may be left zero.
type PreferredAddress struct {
	IPv4 netip.AddrPort
	IPv6 netip.AddrPort
}

// addrs returns the addresses that are set, IPv4 first.
func (pa *PreferredAddress) addrs() []netip.AddrPort {
	var as []netip.AddrPort
	for _, ap := range []netip.AddrPort{pa.IPv4, pa.IPv6} {
		if ap.IsValid() && !ap.Addr().IsUnspecified() && ap.Port() != 0 {
			as = append(as, ap)
		}
	}
	return as
}

// validate checks the families and that at least one address is set.
func (pa *PreferredAddress) validate() error {
	if pa.IPv4.IsValid() && !pa.IPv4.Addr().Is4() {
		return fmt.Errorf("quic: PreferredAddress.IPv4 %s is not an IPv4 address", pa.IPv4)
	}
	if pa.IPv6.IsValid() && (!pa.IPv6.Addr().Is6() || pa.IPv6.Addr().Is4In6()) {
		return fmt.Errorf("quic: PreferredAddress.IPv6 %s is not an IPv6 address", pa.IPv6)
	}
	if len(pa.addrs()) == 0 {
		return errors.New("quic: PreferredAddress has no address and port")
	}
	return nil
}

// checkPreferredAddressSocket makes sure a listener's socket, bound to
// local, receives what clients send to the preferred address: the same
// port, and the unspecified address (an IPv6 one for an IPv6 preferred
// address: Linux sockets on [::] take both families) or that address.
func checkPreferredAddressSocket(pa *PreferredAddress, local net.Addr) error {
	if pa == nil {
		return nil
	}
	la, ok := addrPort(local)
	if !ok {
		return errors.New("quic: PreferredAddress needs a UDP socket")
	}
	for _, ap := range pa.addrs() {
		switch {
		case ap.Port() != la.Port():
			return fmt.Errorf("quic: preferred address %s: the socket listens on port %d", ap, la.Port())
		case la.Addr().IsUnspecified() && la.Addr().Is4() && ap.Addr().Is6():
			return fmt.Errorf("quic: preferred address %s: the socket listens on IPv4 only", ap)
		case !la.Addr().IsUnspecified() && la.Addr() != ap.Addr():
			return fmt.Errorf("quic: preferred address %s: the socket is bound to %s", ap, la.Addr())
		}
	}
	return nil
}

// maxProbeChallenges bounds the PATH_CHALLENGEs we sent with answers to
// probes, and maxProbeValidated the addresses their answers proved.
const (
	maxProbeChallenges = 4
	maxProbeValidated  = 2
)

// probeChallenge is a PATH_CHALLENGE sent to the address a probe came
// from.
type probeChallenge struct {
	to   netip.AddrPort
	from netip.Addr // our address the probe came to, when known
	data [8]byte
}

// preferredAddressState is the preferred_address state of a connection
// (in connExtensions).
type preferredAddressState struct {
	// Server: the connection ID of sequence 1 and its reset token, which
	// the transport parameter carries.
	cid   []byte
	token [connid.TokenLen]byte
	// Client: the server's preferred address, and whether the move to it
	// was started.
	peer    *wire.PreferredAddress
	started bool
	// switchTo is the path to a new server address that Path.Switch moved
	// to, whose address the connection's goroutine takes over.
	switchTo *Path
	// probes is made by the first probe we answer (most connections see
	// none).
	probes *probeChallenges
}

// probeChallenges is our challenges to probing addresses and the addresses
// they proved.
type probeChallenges struct {
	challenges  [maxProbeChallenges]probeChallenge
	nChallenges int
	validated   [maxProbeValidated]probeChallenge // data unused
	nValidated  int
}

// issueCID issues the connection ID of the preferred
// address, sequence 1, from local before any other (a server's, at its
// start).
func (st *preferredAddressState) issueCID(isClient bool, conf *Config, local *connid.LocalCIDs) {
	if isClient || conf.PreferredAddress == nil || local == nil || st.cid != nil {
		return
	}
	cid, token, err := local.IssuePreferredAddressCID()
	if err != nil {
		return // zero-length IDs: no preferred address can be offered
	}
	st.cid, st.token = cid.Bytes(), token
}

// param is the preferred_address transport parameter a server sends, or
// nil.
func (st *preferredAddressState) param(isClient bool, conf *Config) *wire.PreferredAddress {
	pa := conf.PreferredAddress
	if isClient || pa == nil || st.cid == nil {
		return nil
	}
	p := &wire.PreferredAddress{ConnectionID: st.cid, StatelessResetToken: st.token}
	p.IPv4 = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	p.IPv6 = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	for _, ap := range pa.addrs() {
		if ap.Addr().Is4() {
			p.IPv4 = ap
		} else {
			p.IPv6 = ap
		}
	}
	return p
}

// onPeer stores the server's preferred_address: its connection ID is the
// server's sequence 1 (in remote) whether we move or not (RFC 9000
// section 5.1.1).
func (st *preferredAddressState) onPeer(p *wire.TransportParameters, isClient bool, remote *connid.RemoteCIDs) error {
	pa := p.PreferredAddress
	if !isClient || pa == nil {
		return nil
	}
	if err := remote.AddPreferredAddressCID(pa.ConnectionID, pa.StatelessResetToken); err != nil {
		return withFrameType(err, 0)
	}
	st.peer = pa
	return nil
}

// candidates are the addresses a client tries, in order: the family it
// uses first, never the address it already talks to (current).
func (st *preferredAddressState) candidates(current netip.AddrPort) []netip.AddrPort {
	pa := st.peer
	var cands []netip.AddrPort
	for _, ap := range []netip.AddrPort{pa.IPv4, pa.IPv6} {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if ap.IsValid() && !ap.Addr().IsUnspecified() && ap.Port() != 0 && ap != current {
			cands = append(cands, ap)
		}
	}
	if len(cands) == 2 && current.Addr().Is6() {
		cands[0], cands[1] = cands[1], cands[0]
	}
	return cands
}

// takeSwitchedAddress makes the server address of the path Path.Switch
// moved to the connection's (ps). It runs on the connection's goroutine,
// which reads ps.remote without the lock. Conn.mu is held.
func (st *preferredAddressState) takeSwitchedAddress(ps *pathState) {
	if p := st.switchTo; p != nil {
		ps.remote, ps.remoteAP = p.remote, p.remoteAP
		st.switchTo = nil
	}
}

// startPreferredAddressMigration starts the move to the server's
// preferred address once the handshake is confirmed (RFC 9000 section
// 9.6.1). c.mu is held.
func (c *Conn) startPreferredAddressMigration() {
	if !c.isClient || c.x.pa.started || c.x.pa.peer == nil || !c.config.MigrateToPreferredAddress ||
		!c.hs.confirmed || c.close.err != nil || len(c.path.extra) > 0 {
		return
	}
	c.x.pa.started = true
	cands := c.x.pa.candidates(c.path.remoteAP)
	if len(cands) == 0 {
		return
	}
	// Validation of a new path fails after three PTOs, of the current
	// path or a fresh one, whichever is longer (RFC 9000 section 8.2.4).
	fresh := recovery.NewRTTStats(0)
	wait := 3 * max(c.loss.pto(), fresh.PTOBase()+c.loss.rec.RTT().MaxAckDelay())
	cid := slices.Clone(c.x.pa.peer.ConnectionID)
	go func() {
		for _, ap := range cands {
			if c.ctx.Err() != nil || c.tryPreferredAddress(ap, cid, wait) {
				return
			}
		}
	}()
}

// tryPreferredAddress validates the path to ap from a new socket, using
// the preferred address's connection ID, and moves the connection there;
// false when that fails.
func (c *Conn) tryPreferredAddress(ap netip.AddrPort, cid []byte, wait time.Duration) bool {
	network, local := "udp4", netip.IPv4Unspecified()
	if ap.Addr().Is6() {
		network, local = "udp6", netip.IPv6Unspecified()
	}
	udp, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return false
	}
	t := &Transport{Conn: udp, createdConn: true}
	p, err := c.addPath(t, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		_ = t.Close()
		return false
	}
	c.mu.Lock()
	p.dcid, p.dcidSeq, p.switchCID = cid, 1, true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	if p.Probe(ctx) != nil || p.Switch() != nil {
		_ = p.Close()
		_ = t.Close()
		return false
	}
	// The connection now sends from t: close it when the connection ends.
	go func() {
		<-c.runDone
		_ = t.Close()
	}()
	return true
}

// appendProbeChallenge appends a PATH_CHALLENGE for the path a probe came
// on (from to, sent to our from) to the frames answering it, and remembers
// it.
func (pa *preferredAddressState) appendProbeChallenge(b []byte, to netip.AddrPort, from netip.Addr) []byte {
	if pa.probes == nil {
		pa.probes = new(probeChallenges)
	}
	st := pa.probes
	pc := probeChallenge{to: to, from: from}
	_, _ = rand.Read(pc.data[:])
	if st.nChallenges == maxProbeChallenges {
		copy(st.challenges[:], st.challenges[1:])
		st.nChallenges--
	}
	st.challenges[st.nChallenges] = pc
	st.nChallenges++
	return wire.AppendFrame(b, &wire.Frame{Type: wire.FrameTypePathChallenge, PathData: pc.data})
}

// onProbeResponse records the address a PATH_RESPONSE to one of our probe
// challenges proves, whichever path the response came on.
func (pa *preferredAddressState) onProbeResponse(data [8]byte) {
	st := pa.probes
	if st == nil {
		return
	}
	for i := range st.nChallenges {
		pc := st.challenges[i]
		if pc.data != data {
			continue
		}
		path := probeChallenge{to: pc.to, from: pc.from}
		if !slices.Contains(st.validated[:st.nValidated], path) {
			if st.nValidated == maxProbeValidated {
				copy(st.validated[:], st.validated[1:])
				st.nValidated--
			}
			st.validated[st.nValidated] = path
			st.nValidated++
		}
		return
	}
}

// probeValidated reports whether an answered probe challenge proved the
// path from ap to our address local.
func (pa *preferredAddressState) probeValidated(ap netip.AddrPort, local netip.Addr) bool {
	st := pa.probes
	return st != nil && slices.Contains(st.validated[:st.nValidated], probeChallenge{to: ap, from: local})
}
