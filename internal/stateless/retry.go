package stateless

import (
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// Errors of AppendRetry and AppendClose. They mean the caller drops the
// Initial instead of answering it.
var (
	ErrNotInitial   = errors.New("stateless: the packet answered is not a client Initial")
	ErrVersion      = errors.New("stateless: the Initial's version is not spoken")
	ErrDCIDTooShort = errors.New("stateless: a Retry answers only an Initial whose DCID the client chose (8 bytes or more)")
	ErrBadSCID      = errors.New("stateless: a Retry's SCID must have 1 to 20 bytes and differ from the client's DCID")
	ErrEmptyToken   = errors.New("stateless: a Retry needs a token")
)

// retryUnused are the four bits of a Retry's first byte that RFC 9000
// section 17.2.5 leaves to the server ("an arbitrary value"). All ones, as
// in the RFC 9001 and RFC 9369 appendix A.4 examples.
const retryUnused = 0x0f

// AppendRetry appends to b a Retry (RFC 9000 section 17.2.5) answering the
// client Initial in hdr, which Examine parsed: it goes to the client's SCID,
// carries scid (the connection ID the client must use from now on: the
// caller's choice, a random ID or one of its routable server IDs) and tok
// (a retry token binding the client's address, hdr.DestConnID and scid),
// and ends with the integrity tag for hdr.DestConnID (RFC 9001 section 5.8,
// RFC 9369 section 3.3.3 for v2). Only a first Initial is answered: its
// DCID is the client's choice and must have MinClientDCIDLen bytes (a
// client follows one Retry only, so an Initial with a retry token that
// failed never gets another). It does not allocate when b has MaxRetryLen
// bytes to spare.
func (r *Responder) AppendRetry(b []byte, hdr *wire.LongHeader, scid, tok []byte) ([]byte, error) {
	if err := r.checkRetry(hdr, scid); err != nil {
		return b, err
	}
	if len(tok) == 0 {
		return b, ErrEmptyToken
	}
	start := len(b)
	return sealRetry(b, start, append(appendRetryHeader(b, hdr, scid), tok...), hdr)
}

// AppendIssuedRetry is AppendRetry with a retry token that iss mints in
// place for the client at client, binding hdr.DestConnID and scid, at now:
// the agent's per-Retry path, which so copies no token.
func (r *Responder) AppendIssuedRetry(b []byte, hdr *wire.LongHeader, scid []byte, iss *token.Issuer, client netip.AddrPort, now time.Time) ([]byte, error) {
	if err := r.checkRetry(hdr, scid); err != nil {
		return b, err
	}
	start := len(b)
	out, err := iss.AppendRetry(appendRetryHeader(b, hdr, scid), client, hdr.DestConnID, scid, now)
	if err != nil {
		return b, err
	}
	return sealRetry(b, start, out, hdr)
}

// checkRetry applies the rules for answering hdr with a Retry from scid.
func (r *Responder) checkRetry(hdr *wire.LongHeader, scid []byte) error {
	switch {
	case hdr.Type != wire.PacketTypeInitial:
		return ErrNotInitial
	case !r.Supports(hdr.Version):
		return ErrVersion
	case len(hdr.DestConnID) < MinClientDCIDLen:
		return ErrDCIDTooShort
	case len(scid) == 0 || len(scid) > wire.MaxConnIDLen || string(scid) == string(hdr.DestConnID):
		return ErrBadSCID
	}
	return nil
}

// appendRetryHeader appends a Retry's header, up to where the token starts.
func appendRetryHeader(b []byte, hdr *wire.LongHeader, scid []byte) []byte {
	start := len(b)
	b = wire.AppendRetry(b, hdr.Version, hdr.SrcConnID, scid, nil)
	b[start] |= retryUnused
	return b
}

// sealRetry appends the integrity tag to the Retry that out holds from
// start on; on failure it returns b, the buffer as the caller gave it.
func sealRetry(b []byte, start int, out []byte, hdr *wire.LongHeader) ([]byte, error) {
	// The tag covers the Retry alone, not what the buffer held before it;
	// with the room grown first it is sealed in place.
	out = slices.Grow(out, wire.RetryIntegrityTagLen)
	if _, err := handshake.AppendRetryIntegrityTag(out[start:], hdr.Version, hdr.DestConnID); err != nil {
		return b, err
	}
	return out[:len(out)+wire.RetryIntegrityTagLen], nil
}
