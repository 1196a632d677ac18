package quic

import (
	"fmt"
	"slices"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// Compatible version negotiation (RFC 9368) between QUIC v1 and v2, which
// are compatible with each other (RFC 9369 section 4).
//
// A client sends its first Initial in Config.Versions[0] (its "chosen
// version") and lists in the version_information transport parameter the
// chosen version and the other versions of Config.Versions that its first
// flight can be converted to, in its order of preference. A server reads
// that list when the ClientHello arrives, picks the first of its own
// Config.Versions that the client offers and that the chosen version is
// compatible with, and, when that is not the chosen version, switches the
// connection to it before it sends any CRYPTO data: its Initials, all
// Handshake and 1-RTT packets use the negotiated version from then on,
// while it still reads the client's Initials and 0-RTT packets of the
// chosen version. The client learns the negotiated version from the first
// server Initial of another version that decrypts, and switches its Initial
// keys. Both sides then check the other's version_information (RFC 9368
// section 4, downgrade prevention).

// versionNegotiation is the compatible version negotiation state of a
// connection (in connExtensions).
type versionNegotiation struct {
	// switched says that compatible version negotiation moved the
	// connection from chosen to Conn.version.
	switched bool
	// chosen is the version of the client's first Initial of this
	// connection attempt, once switched.
	chosen wire.Version
	// chosenOpener (server, once switched) reads the client's Initials of
	// the chosen version, which keep coming until it learns the switch.
	chosenOpener *handshake.Opener
}

// compatibleVersions reports whether a first flight of version a can be
// converted to version b: v1 and v2 into each other (RFC 9369 section 4).
func compatibleVersions(a, b wire.Version) bool { return a.IsSupported() && b.IsSupported() }

// chosenVersion is the version of the client's first Initial of this
// connection attempt: the version in use unless compatible version
// negotiation moved away from it. 0-RTT packets keep using it (RFC 9369
// section 4.1).
func (c *Conn) chosenVersion() wire.Version { return c.x.vn.chosenVersion(c.version) }

// chosenVersion is the client's first version when the connection moved
// away from it, else current (the version in use).
func (vn *versionNegotiation) chosenVersion(current wire.Version) wire.Version {
	if vn.switched {
		return vn.chosen
	}
	return current
}

// versionInformation is our version_information transport parameter
// (RFC 9368 section 3): for a client the chosen version and every version
// of Config.Versions compatible with it, preferred first; for a server the
// negotiated version and the versions it speaks.
func (vn *versionNegotiation) versionInformation(current wire.Version, isClient bool, conf *Config) *wire.VersionInformation {
	vi := &wire.VersionInformation{ChosenVersion: current}
	if isClient {
		vi.ChosenVersion = vn.chosenVersion(current)
		vi.AvailableVersions = vn.offeredVersions(current, conf)
		return vi
	}
	for _, v := range conf.Versions {
		if v.IsSupported() {
			vi.AvailableVersions = append(vi.AvailableVersions, v)
		}
	}
	return vi
}

// offeredVersions are the versions a client lists in its
// version_information: the chosen version, in its place in Config.Versions,
// and those compatible with it.
func (vn *versionNegotiation) offeredVersions(current wire.Version, conf *Config) []wire.Version {
	chosen := vn.chosenVersion(current)
	vs := make([]wire.Version, 0, len(conf.Versions)+1)
	for _, v := range conf.Versions {
		if v == chosen || compatibleVersions(chosen, v) {
			vs = append(vs, v)
		}
	}
	if !slices.Contains(vs, chosen) {
		vs = append([]wire.Version{chosen}, vs...)
	}
	return vs
}

// acceptOtherVersion decides about a long-header packet whose version is
// not the one in use: true means it is processed. A client switches to the
// version of a server Initial that it offered, that decrypts, and that
// arrives before the server's first CRYPTO data has been processed (which
// fixes the version); a server reads Initial and 0-RTT packets of the
// client's chosen version after it switched away from it. version is the
// connection's, which a client's switch changes.
func (vn *versionNegotiation) acceptOtherVersion(pkt []byte, hdr *wire.LongHeader, isClient bool, version *wire.Version, spaces *[3]pnSpace, cids *cidState, conf *Config) bool {
	if !isClient {
		return vn.switched && hdr.Version == vn.chosen &&
			(hdr.Type == wire.PacketTypeInitial || hdr.Type == wire.PacketType0RTT)
	}
	sp := &spaces[spaceInitial]
	if hdr.Type != wire.PacketTypeInitial || vn.switched || sp.discarded ||
		spaces[spaceHandshake].opener != nil || len(hdr.Token) > 0 ||
		!compatibleVersions(*version, hdr.Version) || !slices.Contains(vn.offeredVersions(*version, conf), hdr.Version) {
		return false
	}
	// The Initial keys of both versions come from the DCID of the client's
	// first Initial (after a Retry, the Retry's SCID).
	keyCID := cids.origDest
	if cids.retrySrc != nil {
		keyCID = cids.retrySrc
	}
	sealer, opener, err := handshake.NewInitialKeys(keyCID, hdr.Version, true)
	if err != nil {
		return false
	}
	// Only a packet that decrypts may change the version: trial on a copy
	// (decryption works in place).
	trial := getBuffer()
	defer putBuffer(trial)
	largest := int64(-1)
	if pn, ok := sp.tracker.LargestReceived(); ok {
		largest = int64(pn)
	}
	if _, _, err := opener.UnprotectPacket(append((*trial)[:0], pkt...), hdr.PNOffset, largest); err != nil {
		return false
	}
	*vn = versionNegotiation{switched: true, chosen: *version}
	*version = hdr.Version
	sp.sealer, sp.opener = sealer, opener
	return true
}

// initialOpener is the opener for a received Initial of version v: that
// of the Initial space (current, its version) unless v is the version a
// server switched from.
func (vn *versionNegotiation) initialOpener(v, current wire.Version, initial *pnSpace) *handshake.Opener {
	if v != current && vn.chosenOpener != nil {
		return vn.chosenOpener
	}
	return initial.opener
}

// negotiate runs when the peer's transport parameters arrive. A
// server validates the client's version_information and switches to the
// version it prefers among those offered; a client validates the server's
// (RFC 9368 section 4). version is the connection's, which a server's
// switch changes along with the Initial space's keys (initial, from the
// client's DCID clientDest); restarted says a client restarted after
// Version Negotiation.
func (vn *versionNegotiation) negotiate(p *wire.TransportParameters, isClient bool, version *wire.Version, initial *pnSpace, clientDest []byte, restarted bool, conf *Config) error {
	if isClient {
		return vn.checkServerVersionInformation(p.VersionInformation, *version, restarted, conf)
	}
	vi := p.VersionInformation
	if vi == nil {
		return nil // a client without RFC 9368 stays in its version
	}
	if !slices.Contains(vi.AvailableVersions, vi.ChosenVersion) {
		return qerr.NewTransportParameterError("version_information: chosen version not among the available versions")
	}
	if vi.ChosenVersion != *version {
		return versionNegotiationError("client's chosen version %s is not the version of its Initial packets %s", vi.ChosenVersion, *version)
	}
	for _, v := range conf.Versions {
		if !v.IsSupported() || !slices.Contains(vi.AvailableVersions, v) || !compatibleVersions(*version, v) {
			continue
		}
		if v != *version {
			return vn.switchServerVersion(v, version, initial, clientDest)
		}
		return nil
	}
	return nil
}

// switchServerVersion moves a server connection to version v before any of
// its CRYPTO data is sealed: Initials (space sp, keyed by the client's
// DCID clientDest) go out in v, the client's Initials of the chosen
// version are still read. *version is the connection's.
func (vn *versionNegotiation) switchServerVersion(v wire.Version, version *wire.Version, sp *pnSpace, clientDest []byte) error {
	sealer, opener, err := handshake.NewInitialKeys(clientDest, v, false)
	if err != nil {
		return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
	}
	*vn = versionNegotiation{switched: true, chosen: *version, chosenOpener: sp.opener}
	*version = v
	sp.sealer, sp.opener = sealer, opener
	return nil
}

// checkServerVersionInformation validates the server's version_information
// on a client (RFC 9368 section 4); current is the version in use,
// restarted says a Version Negotiation packet made us start over.
func (vn *versionNegotiation) checkServerVersionInformation(vi *wire.VersionInformation, current wire.Version, restarted bool, conf *Config) error {
	if vi == nil {
		if restarted {
			return versionNegotiationError("no version_information from the server after Version Negotiation")
		}
		if vn.switched {
			return versionNegotiationError("no version_information from a server that switched to %s", current)
		}
		return nil
	}
	if vi.ChosenVersion != current {
		return versionNegotiationError("server's chosen version %s is not the negotiated version %s", vi.ChosenVersion, current)
	}
	if !slices.Contains(vn.offeredVersions(current, conf), vi.ChosenVersion) {
		return versionNegotiationError("server chose %s, which we did not offer", vi.ChosenVersion)
	}
	if restarted {
		// We must have picked the same version from a Version Negotiation
		// packet listing what the server says it supports: a forged one
		// cannot have steered us to another version.
		theirs := append(slices.Clone(vi.AvailableVersions), current)
		if pick, ok := pickVersion(conf.Versions, theirs); !ok || pick != vn.chosenVersion(current) {
			return versionNegotiationError("the server's versions %v would not have led to %s", theirs, vn.chosenVersion(current))
		}
	}
	return nil
}

// pickVersion is the version a client restarts in after Version
// Negotiation: the first of ours that the server lists.
func pickVersion(ours []Version, theirs []wire.Version) (wire.Version, bool) {
	for _, v := range ours {
		if v.IsSupported() && slices.Contains(theirs, v) {
			return v, true
		}
	}
	return 0, false
}

func versionNegotiationError(format string, a ...any) error {
	return qerr.NewTransportError(qerr.VersionNegotiationError, 0, fmt.Sprintf(format, a...))
}

// initialKeyVersion is the version whose Initial keys protect a client's
// first Initial in version v: v itself, or v1 for a reserved version, which
// no server reads anyway (it answers with Version Negotiation).
func initialKeyVersion(v wire.Version) wire.Version {
	if v.IsReserved() {
		return wire.Version1
	}
	return v
}
