package stateless

import (
	"errors"
	"slices"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// MaxCloseReasonLen bounds the reason phrase of a stateless close; a longer
// one is cut. The close stays far below the client's 1200 bytes, so it
// amplifies nothing.
const MaxCloseReasonLen = 64

// MaxCloseLen is the longest stateless close: a long header with two
// 20-byte connection IDs, an empty token and a 2-byte Length, a 2-byte
// packet number, CONNECTION_CLOSE with 8-byte code and frame type, the
// longest reason after its 2-byte length, and the AEAD tag.
const MaxCloseLen = 1 + 4 + 1 + wire.MaxConnIDLen + 1 + wire.MaxConnIDLen + 1 + closeLengthLen +
	closePNLen + 1 + 8 + 8 + 2 + MaxCloseReasonLen + closeTagLen

const (
	closePNLen     = 2
	closeLengthLen = 2
	closeTagLen    = 16 // AES-128-GCM, the Initial AEAD
)

// ErrCloseCode is returned for an error code or frame type that no varint
// can carry.
var ErrCloseCode = errors.New("stateless: error code or frame type over 2^62-1")

// AppendClose appends to b a stateless close of the connection attempt that
// the client Initial in hdr (parsed by Examine) begins: an Initial packet
// from the server carrying one CONNECTION_CLOSE frame of type 0x1c with
// e's code, frame type and reason (cut to MaxCloseReasonLen bytes),
// protected with the Initial keys of the client's DCID, which the client
// holds (RFC 9000 sections 10.2.3 and 17.2.2; RFC 9001 section 5.2). It goes
// to the client's SCID and comes from its DCID. INVALID_TOKEN for a bad
// retry token (RFC 9000 section 8.1.3) and CONNECTION_REFUSED for a server
// at its limits are the two uses. The packet is packet number 0 and is not
// padded: CONNECTION_CLOSE is not ack-eliciting (RFC 9000 section 14.1).
// Deriving the server's Initial sealing keys allocates their AES state.
func (r *Responder) AppendClose(b []byte, hdr *wire.LongHeader, e *qerr.TransportError) ([]byte, error) {
	switch {
	case hdr.Type != wire.PacketTypeInitial:
		return b, ErrNotInitial
	case !r.Supports(hdr.Version):
		return b, ErrVersion
	case uint64(e.Code) > wire.MaxVarint || e.FrameType > wire.MaxVarint:
		return b, ErrCloseCode
	}
	sealer, err := handshake.NewInitialSealer(hdr.DestConnID, hdr.Version, false)
	if err != nil {
		return b, err
	}
	reason := e.Reason
	if len(reason) > MaxCloseReasonLen {
		reason = reason[:MaxCloseReasonLen]
	}
	start := len(b)
	out := wire.LongHeader{Type: wire.PacketTypeInitial, Version: hdr.Version, DestConnID: hdr.SrcConnID, SrcConnID: hdr.DestConnID}
	p := wire.AppendLongHeader(b, &out, closePNLen, closeLengthLen)
	lengthAt := len(p) - closeLengthLen
	pnOffset := len(p) - start
	p = wire.AppendPacketNumber(p, 0, closePNLen)
	p = wire.AppendConnectionCloseFrame(p, false, uint64(e.Code), e.FrameType, []byte(reason))
	wire.PutVarintWithLen(p[lengthAt:], uint64(len(p)-start-pnOffset+sealer.Overhead()), closeLengthLen)
	// Sealed in place after the caller's bytes, with room for the tag.
	p = slices.Grow(p, sealer.Overhead())
	pkt, err := sealer.ProtectPacket(p[start:], pnOffset, closePNLen, 0)
	if err != nil {
		return b, err
	}
	return p[:start+len(pkt)], nil
}
