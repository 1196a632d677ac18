package wire

import (
	"encoding/binary"

	"github.com/turboretry/turboretry/internal/protocol"
)

// MaxConnIDLen is the longest connection ID QUIC v1 and v2 allow.
const MaxConnIDLen = protocol.MaxConnectionIDLen

// RetryIntegrityTagLen is the size of the Retry Integrity Tag (RFC 9001 section 5.8).
const RetryIntegrityTagLen = 16

// LongHeader is a parsed QUIC v1 or v2 long header. Byte slices point into
// the parsed packet.
type LongHeader struct {
	Type    PacketType
	Version Version
	// DestConnID and SrcConnID are the connection IDs, at most 20 bytes each.
	DestConnID []byte
	SrcConnID  []byte
	// Token is the Initial token or the Retry token; nil for other types.
	Token []byte
	// Length is the Length field: packet number plus protected payload,
	// in bytes. Zero for Retry, which has no Length field.
	Length uint64
	// PNOffset is the offset of the packet number field from the start of
	// the packet, where header protection sampling starts (RFC 9001 5.4.2).
	PNOffset int
	// PacketLen is the length of the whole packet, so that the next
	// coalesced packet starts at PacketLen. A Retry packet fills the datagram.
	PacketLen int
	// RetryIntegrityTag is the last 16 bytes of a Retry packet.
	RetryIntegrityTag []byte
}

// ParseLongHeader parses the long header of a v1 or v2 Initial, 0-RTT,
// Handshake or Retry packet at the start of b. The packet number length
// bits and reserved bits stay protected, so they are not interpreted here.
// Version Negotiation packets and other versions give
// ErrUnsupportedVersion; use ParseInvariantHeader to route those.
func ParseLongHeader(b []byte, h *LongHeader) error {
	*h = LongHeader{}
	off, err := parseLongInvariants(b, &h.Version, &h.DestConnID, &h.SrcConnID)
	if err != nil {
		return err
	}
	if !h.Version.IsSupported() {
		return ErrUnsupportedVersion
	}
	if len(h.DestConnID) > MaxConnIDLen || len(h.SrcConnID) > MaxConnIDLen {
		return ErrConnIDTooLong
	}
	if b[0]&0x40 == 0 {
		return ErrFixedBitZero
	}
	h.Type = longPacketType(h.Version, b[0])
	rest := b[off:]
	switch h.Type {
	case PacketTypeRetry:
		if len(rest) < RetryIntegrityTagLen {
			return ErrPacketTruncated
		}
		tokenLen := len(rest) - RetryIntegrityTagLen
		if tokenLen == 0 {
			return ErrEmptyRetryToken
		}
		h.Token = rest[:tokenLen:tokenLen]
		h.RetryIntegrityTag = rest[tokenLen:]
		h.PacketLen = len(b)
		return nil
	case PacketTypeInitial:
		tokenLen, n, err := ParseVarint(rest)
		if err != nil {
			return ErrPacketTruncated
		}
		rest = rest[n:]
		if tokenLen > uint64(len(rest)) {
			return ErrPacketTruncated
		}
		if tokenLen > 0 {
			h.Token = rest[:tokenLen:tokenLen]
		}
		rest = rest[tokenLen:]
		off += n + int(tokenLen)
	}
	length, n, err := ParseVarint(rest)
	if err != nil {
		return ErrPacketTruncated
	}
	off += n
	if length > uint64(len(b)-off) {
		return ErrLengthBeyondPacket
	}
	h.Length = length
	h.PNOffset = off
	h.PacketLen = off + int(length)
	return nil
}

// parseLongInvariants reads the version-independent part of a long header
// (RFC 8999 section 5.1) and returns the offset just past the source
// connection ID. Connection IDs may be up to 255 bytes here.
func parseLongInvariants(b []byte, v *Version, dcid, scid *[]byte) (int, error) {
	if len(b) < 7 {
		if len(b) > 0 && !IsLongHeader(b[0]) {
			return 0, ErrNotLongHeader
		}
		return 0, ErrPacketTruncated
	}
	if !IsLongHeader(b[0]) {
		return 0, ErrNotLongHeader
	}
	*v = Version(binary.BigEndian.Uint32(b[1:5]))
	off := 5
	dl := int(b[off])
	off++
	if len(b) < off+dl+1 {
		return 0, ErrPacketTruncated
	}
	*dcid = b[off : off+dl : off+dl]
	off += dl
	sl := int(b[off])
	off++
	if len(b) < off+sl {
		return 0, ErrPacketTruncated
	}
	*scid = b[off : off+sl : off+sl]
	return off + sl, nil
}

// AppendLongHeader appends the long header described by h: for Initial,
// 0-RTT and Handshake packets everything up to and including the Length
// field, so the caller appends the packet number next (AppendPacketNumber);
// for Retry the whole packet except the integrity tag.
//
// pnLen (1-4) goes into the first byte. The Length field is written in
// lengthLen bytes (1, 2, 4 or 8), or minimally when lengthLen is 0; a fixed
// size lets the caller write a placeholder and patch it with
// PutVarintWithLen once the payload size is known. The reserved bits are 0.
// A reserved version (0x?a?a?a?a, which a client sends to elicit Version
// Negotiation) gets v1's layout. Invalid arguments (another unsupported
// version, over-long connection IDs, bad lengths) are programming errors
// and panic.
func AppendLongHeader(b []byte, h *LongHeader, pnLen, lengthLen int) []byte {
	if !h.Version.IsSupported() && !h.Version.IsReserved() {
		panic("wire: AppendLongHeader with unsupported version " + h.Version.String())
	}
	if len(h.DestConnID) > MaxConnIDLen || len(h.SrcConnID) > MaxConnIDLen {
		panic("wire: AppendLongHeader with connection ID longer than 20 bytes")
	}
	b0 := 0xc0 | longTypeBits(h.Version, h.Type)
	if h.Type != PacketTypeRetry {
		if pnLen < 1 || pnLen > 4 {
			panic("wire: packet number length must be 1 to 4")
		}
		b0 |= byte(pnLen - 1)
	}
	b = append(b, b0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.Version))
	b = append(b, byte(len(h.DestConnID)))
	b = append(b, h.DestConnID...)
	b = append(b, byte(len(h.SrcConnID)))
	b = append(b, h.SrcConnID...)
	switch h.Type {
	case PacketTypeRetry:
		return append(b, h.Token...)
	case PacketTypeInitial:
		b = AppendVarint(b, uint64(len(h.Token)))
		b = append(b, h.Token...)
	}
	if lengthLen == 0 {
		return AppendVarint(b, h.Length)
	}
	return AppendVarintWithLen(b, h.Length, lengthLen)
}
