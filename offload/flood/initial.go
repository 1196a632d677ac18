package flood

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
)

// UDPPayloadSize is the size of every generated Initial datagram: the
// minimum a client must pad its Initials to (RFC 9000 section 14.1), as in
// the paper's flood.
const UDPPayloadSize = 1200

// Connection ID lengths. A client's first DCID must be at least 8 bytes
// (RFC 9000 section 7.2).
const (
	MinDCIDLen     = 8
	DefaultDCIDLen = 8
	DefaultSCIDLen = 8
	MaxCIDLen      = handshake.MaxConnectionIDLen
)

const (
	pnLen     = 1  // a client's first packet number, 0, in one byte
	lengthLen = 2  // Length varint size: 1200 needs two bytes
	tagLen    = 16 // AES-128-GCM tag
)

// Errors returned for bad generator input.
var (
	ErrConnIDLength  = errors.New("flood: connection ID length out of range")
	ErrHelloTooLarge = errors.New("flood: ClientHello does not fit one Initial packet")
	ErrVersion       = errors.New("flood: unsupported QUIC version")
)

// initialHeaderLen is the long header size up to the packet number.
func initialHeaderLen(dcidLen, scidLen int) int {
	// first byte, version, DCID length, DCID, SCID length, SCID,
	// token length (0), Length.
	return 1 + 4 + 1 + dcidLen + 1 + scidLen + 1 + lengthLen
}

func checkInitialArgs(v Version, dcid, scid, hello []byte) error {
	if !v.IsSupported() {
		return fmt.Errorf("%w: %v", ErrVersion, v)
	}
	if len(dcid) < MinDCIDLen || len(dcid) > MaxCIDLen || len(scid) > MaxCIDLen {
		return ErrConnIDLength
	}
	room := UDPPayloadSize - initialHeaderLen(len(dcid), len(scid)) - pnLen - tagLen
	frame := 1 + 1 + wire.VarintLen(uint64(len(hello))) + len(hello)
	if len(hello) == 0 || frame > room {
		return ErrHelloTooLarge
	}
	return nil
}

// clientSealer derives the client's Initial packet protection for dcid.
// It is NewInitialKeys without the unused server-side Opener.
func clientSealer(v Version, dcid []byte) (*handshake.Sealer, error) {
	client, _, err := handshake.InitialSecrets(dcid, v)
	if err != nil {
		return nil, err
	}
	return handshake.NewSealer(tls.TLS_AES_128_GCM_SHA256, client, v)
}

// AppendInitial appends one protected client Initial packet of exactly
// UDPPayloadSize bytes to dst: a long header with dcid and scid, packet
// number 0, a CRYPTO frame carrying hello, PADDING, and the AEAD tag,
// sealed with the Initial keys derived from dcid.
func AppendInitial(dst []byte, v Version, dcid, scid, hello []byte) ([]byte, error) {
	if err := checkInitialArgs(v, dcid, scid, hello); err != nil {
		return dst, err
	}
	s, err := clientSealer(v, dcid)
	if err != nil {
		return dst, err
	}
	return appendInitial(dst, s, v, dcid, scid, hello)
}

func appendInitial(dst []byte, s *handshake.Sealer, v Version, dcid, scid, hello []byte) ([]byte, error) {
	start := len(dst)
	// Capacity for the whole packet, so that sealing in place never
	// reallocates away from dst.
	dst = slices.Grow(dst, UDPPayloadSize)
	hdrLen := initialHeaderLen(len(dcid), len(scid))
	h := wire.LongHeader{
		Type:       wire.PacketTypeInitial,
		Version:    v,
		DestConnID: dcid,
		SrcConnID:  scid,
		Length:     uint64(UDPPayloadSize - hdrLen),
	}
	dst = wire.AppendLongHeader(dst, &h, pnLen, lengthLen)
	pnOffset := len(dst) - start
	dst = wire.AppendPacketNumber(dst, 0, pnLen)
	dst = wire.AppendCryptoFrame(dst, 0, hello)
	// PADDING frames are zero bytes up to where the tag starts.
	end := start + UDPPayloadSize - tagLen
	dst = append(dst, make([]byte, end-len(dst))...)
	pkt, err := s.ProtectPacket(dst[start:], pnOffset, pnLen, 0)
	if err != nil {
		return dst[:start], fmt.Errorf("flood: protecting Initial: %w", err)
	}
	if len(pkt) != UDPPayloadSize {
		return dst[:start], errors.New("flood: internal error: Initial has the wrong size")
	}
	return dst[:start+UDPPayloadSize], nil
}
