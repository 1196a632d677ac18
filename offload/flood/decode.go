package flood

import (
	"errors"
	"fmt"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
)

// ErrNotInitial is returned by OpenInitial for anything but a decryptable
// client Initial packet carrying a CRYPTO frame at offset 0.
var ErrNotInitial = errors.New("flood: not a valid client Initial")

// OpenedInitial is what a server learns from a generated Initial.
type OpenedInitial struct {
	Version      Version
	DCID, SCID   []byte
	PacketNumber uint64
	// Crypto is the CRYPTO data at offset 0 (the ClientHello message).
	Crypto []byte
	// Padding counts PADDING bytes.
	Padding int
}

// OpenInitial does what a server does with a client's first Initial: it
// derives the server-side Initial keys from the packet's DCID, removes
// header and packet protection and parses the frames. It works on a copy,
// so pkt is unchanged. Tests and the flood's self-check use it to prove
// that generated packets are real Initials.
func OpenInitial(pkt []byte) (*OpenedInitial, error) {
	var h wire.LongHeader
	if err := wire.ParseLongHeader(pkt, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotInitial, err)
	}
	if h.Type != wire.PacketTypeInitial || len(h.DestConnID) < MinDCIDLen {
		return nil, fmt.Errorf("%w: %v packet, DCID %d bytes", ErrNotInitial, h.Type, len(h.DestConnID))
	}
	v := h.Version
	_, opener, err := handshake.NewInitialKeys(h.DestConnID, v, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotInitial, err)
	}
	buf := append([]byte(nil), pkt[:h.PacketLen]...)
	payload, pn, err := opener.UnprotectPacket(buf, h.PNOffset, -1)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotInitial, err)
	}
	out := &OpenedInitial{
		Version:      v,
		DCID:         append([]byte(nil), h.DestConnID...),
		SCID:         append([]byte(nil), h.SrcConnID...),
		PacketNumber: pn,
	}
	var f wire.Frame
	for len(payload) > 0 {
		n, err := wire.ParseFrame(payload, &f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotInitial, err)
		}
		payload = payload[n:]
		switch f.Type {
		case wire.FrameTypePadding:
			out.Padding += f.PaddingLen
		case wire.FrameTypePing:
		case wire.FrameTypeCrypto:
			if f.Offset != uint64(len(out.Crypto)) {
				return nil, fmt.Errorf("%w: CRYPTO frame at offset %d", ErrNotInitial, f.Offset)
			}
			out.Crypto = append(out.Crypto, f.Data...)
		default:
			return nil, fmt.Errorf("%w: unexpected %v frame", ErrNotInitial, f.Type)
		}
	}
	if len(out.Crypto) == 0 {
		return nil, fmt.Errorf("%w: no CRYPTO data", ErrNotInitial)
	}
	return out, nil
}

// IsClientHello reports whether b is exactly one TLS ClientHello
// handshake message (type 1 and a 24-bit length covering the rest).
func IsClientHello(b []byte) bool {
	if len(b) < 4 || b[0] != 0x01 {
		return false
	}
	n := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
	return n == len(b)-4
}
