package stateless

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// MinDatagramSize is the smallest UDP payload that may carry a client
// Initial (RFC 9000 section 14.1). It is also the smallest datagram answered
// with Version Negotiation: answering less would let a spoofer amplify
// (section 6.1 allows ignoring such packets).
const MinDatagramSize = 1200

// MinClientDCIDLen is the shortest DCID a client may choose for an Initial
// that opens a connection (RFC 9000 section 7.2). Only a DCID the server
// gave the client (a Retry's SCID, vouched for by a valid retry token) may
// be shorter.
const MinClientDCIDLen = 8

// maxVersions is how many versions a Responder speaks at most: v1 and v2.
const maxVersions = 2

// Sizes of the replies, for the destination buffers.
const (
	// MaxVersionNegotiationLen is the longest Version Negotiation packet:
	// two echoed 255-byte connection IDs (RFC 8999 allows them for unknown
	// versions), the versions spoken and one reserved version.
	MaxVersionNegotiationLen = 1 + 4 + 1 + 255 + 1 + 255 + 4*(maxVersions+1)
	// MaxRetryLen is the longest Retry: two 20-byte connection IDs, the
	// longest universal token and the integrity tag.
	MaxRetryLen = 1 + 4 + 1 + wire.MaxConnIDLen + 1 + wire.MaxConnIDLen + token.MaxTokenLen + wire.RetryIntegrityTagLen
	// MaxReplyLen bounds every reply this package builds; a destination
	// buffer with this capacity is never reallocated.
	MaxReplyLen = max(MaxVersionNegotiationLen, MaxRetryLen, MaxCloseLen)
)

// Outcome is what Examine found in a datagram that no connection claims.
type Outcome uint8

// Outcomes. Only VersionNegotiation comes with a reply, only Initial asks
// the caller to go on; every other outcome drops the datagram.
const (
	// Malformed: the header does not parse (also an empty datagram).
	Malformed Outcome = iota
	// ShortHeader: a short-header packet, which only a connection reads.
	ShortHeader
	// ConnIDTooLong: a v1 or v2 long header with a connection ID over 20
	// bytes.
	ConnIDTooLong
	// VersionNegotiationPacket: version 0, a Version Negotiation packet,
	// which only servers send and nobody answers (RFC 9000 section 6.1).
	VersionNegotiationPacket
	// UnsupportedTooSmall: a version we do not speak in a datagram under
	// MinDatagramSize, not answered.
	UnsupportedTooSmall
	// VersionNegotiation: a version we do not speak; the reply is a
	// Version Negotiation packet for the datagram's sender.
	VersionNegotiation
	// UnexpectedRetry: a Retry packet, which only servers send.
	UnexpectedRetry
	// NotInitial: a 0-RTT or Handshake packet, which only a connection
	// reads.
	NotInitial
	// InitialTooSmall: an Initial in a datagram under MinDatagramSize.
	InitialTooSmall
	// DCIDTooShort: an Initial without a token whose DCID is under
	// MinClientDCIDLen bytes.
	DCIDTooShort
	// Initial: an Initial that may open a connection; the header is parsed
	// into the caller's LongHeader. Its token is the caller's to check.
	Initial

	numOutcomes
)

var outcomeLabels = [numOutcomes]string{
	Malformed:                "malformed",
	ShortHeader:              "short_header",
	ConnIDTooLong:            "cid_too_long",
	VersionNegotiationPacket: "version_negotiation_packet",
	UnsupportedTooSmall:      "unsupported_version_too_small",
	VersionNegotiation:       "version_negotiation",
	UnexpectedRetry:          "unexpected_retry",
	NotInitial:               "not_initial",
	InitialTooSmall:          "initial_too_small",
	DCIDTooShort:             "dcid_too_short",
	Initial:                  "initial",
}

// String returns the outcome's label, lower case with underscores.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeLabels[o]
	}
	return "unknown"
}

// Responder applies the stateless rules for a server speaking a fixed set
// of versions. It is immutable and safe for concurrent use.
type Responder struct {
	versions [maxVersions]wire.Version
	n        int
}

// New returns a Responder for a server that speaks versions, preferred
// first; nil or empty means v1 then v2. Reserved versions (0x?a?a?a?a),
// which a client may list to elicit Version Negotiation, are left out: a
// server never accepts one, and Version Negotiation adds a fresh one of its
// own. Another unsupported version, or no supported version, is an error.
func New(versions []wire.Version) (*Responder, error) {
	r := &Responder{}
	if len(versions) == 0 {
		versions = []wire.Version{wire.Version1, wire.Version2}
	}
	for _, v := range versions {
		switch {
		case v.IsReserved():
			continue
		case !v.IsSupported():
			return nil, fmt.Errorf("stateless: unsupported version %v", v)
		case r.Supports(v):
			continue
		}
		r.versions[r.n] = v
		r.n++
	}
	if r.n == 0 {
		return nil, errors.New("stateless: no supported version to speak")
	}
	return r, nil
}

// Supports reports whether the Responder speaks v: a client Initial of v is
// examined, not answered with Version Negotiation. Compatible versions (v1
// and v2, RFC 9369 section 4) are both spoken when both are listed; the
// connection decides which one it ends in.
func (r *Responder) Supports(v wire.Version) bool {
	// New keeps at least one version and never 0, so the unused slot
	// (0) matches nothing a caller asks about but 0, which it rules out.
	return v != 0 && (v == r.versions[0] || v == r.versions[1])
}

// Versions appends the versions the Responder speaks, preferred first, to
// vs.
func (r *Responder) Versions(vs []wire.Version) []wire.Version {
	return append(vs, r.versions[:r.n]...)
}

// Examine reads the first packet of datagram, which no connection of the
// server claims, and says what it is. For VersionNegotiation the reply is
// appended to out (which must not overlap datagram); for Initial, hdr holds
// the parsed header, whose slices point into datagram. Only the first
// packet of a coalesced datagram is examined. Examine never modifies
// datagram and does not allocate when out has MaxVersionNegotiationLen
// bytes to spare.
func (r *Responder) Examine(datagram []byte, hdr *wire.LongHeader, out []byte) (Outcome, []byte) {
	if len(datagram) == 0 {
		return Malformed, nil
	}
	if !wire.IsLongHeader(datagram[0]) {
		return ShortHeader, nil
	}
	// A version we speak goes straight to the full parse, which checks the
	// invariant header on its way (one pass over the header, as the
	// Initials of a flood are the common case).
	if len(datagram) < 5 || !r.Supports(wire.Version(binary.BigEndian.Uint32(datagram[1:5]))) {
		return r.otherVersion(datagram, out)
	}
	if err := wire.ParseLongHeader(datagram, hdr); err != nil {
		// wire returns its sentinels unwrapped; errors.Is would cost a
		// flood of garbage more than the parse.
		if err == wire.ErrConnIDTooLong {
			return ConnIDTooLong, nil
		}
		return Malformed, nil
	}
	switch hdr.Type {
	case wire.PacketTypeInitial:
	case wire.PacketTypeRetry:
		return UnexpectedRetry, nil
	default:
		return NotInitial, nil
	}
	if len(datagram) < MinDatagramSize {
		return InitialTooSmall, nil
	}
	// With a token the DCID may be a Retry's SCID, of the server's length;
	// whether the token vouches for it is the caller's check
	// (DCIDAcceptable).
	if len(hdr.Token) == 0 && len(hdr.DestConnID) < MinClientDCIDLen {
		return DCIDTooShort, nil
	}
	return Initial, nil
}

// otherVersion examines a long header of a version the Responder does not
// speak (or too short to have one).
func (r *Responder) otherVersion(datagram, out []byte) (Outcome, []byte) {
	var inv wire.InvariantHeader
	switch err := wire.ParseInvariantHeader(datagram, &inv); {
	case err != nil:
		return Malformed, nil
	case inv.Version == 0:
		return VersionNegotiationPacket, nil
	case len(datagram) < MinDatagramSize:
		return UnsupportedTooSmall, nil
	}
	return VersionNegotiation, r.AppendVersionNegotiation(out, inv.DestConnID, inv.SrcConnID)
}

// DCIDAcceptable reports whether the DCID of an Initial that Examine passed
// may open a connection: a DCID the client chose must have at least
// MinClientDCIDLen bytes (RFC 9000 section 7.2); one a Retry gave it, which
// validRetryToken (a retry token that validated and binds this DCID as its
// RSCID) vouches for, may be shorter.
func DCIDAcceptable(hdr *wire.LongHeader, validRetryToken bool) bool {
	return validRetryToken || len(hdr.DestConnID) >= MinClientDCIDLen
}
