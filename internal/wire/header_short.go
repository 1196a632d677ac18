package wire

// ShortHeader is a parsed 1-RTT packet header (RFC 9000 section 17.3.1).
type ShortHeader struct {
	// DestConnID points into the packet.
	DestConnID []byte
	// PNOffset is the offset of the packet number field.
	PNOffset int
}

// ParseShortHeader parses a short header whose destination connection ID
// has the local length cidLen (a short header does not carry it). The
// spin, reserved, key phase and packet number length bits are left to the
// caller: all but the spin bit are under header protection.
func ParseShortHeader(b []byte, cidLen int, h *ShortHeader) error {
	*h = ShortHeader{}
	if len(b) == 0 {
		return ErrPacketTruncated
	}
	if IsLongHeader(b[0]) {
		return ErrNotShortHeader
	}
	if b[0]&0x40 == 0 {
		return ErrFixedBitZero
	}
	if cidLen < 0 || cidLen > MaxConnIDLen {
		return ErrConnIDTooLong
	}
	if len(b) < 1+cidLen {
		return ErrPacketTruncated
	}
	h.DestConnID = b[1 : 1+cidLen : 1+cidLen]
	h.PNOffset = 1 + cidLen
	return nil
}

// AppendShortHeader appends a short header up to the packet number, which
// the caller appends next with AppendPacketNumber. Reserved bits are 0.
// An invalid pnLen is a programming error and panics.
func AppendShortHeader(b []byte, dcid []byte, pnLen int, keyPhase, spin bool) []byte {
	if pnLen < 1 || pnLen > 4 {
		panic("wire: packet number length must be 1 to 4")
	}
	b0 := 0x40 | byte(pnLen-1)
	if spin {
		b0 |= 0x20
	}
	if keyPhase {
		b0 |= 0x04
	}
	b = append(b, b0)
	return append(b, dcid...)
}
