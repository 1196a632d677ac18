package wire

// PacketType identifies a QUIC packet type independent of the version's
// long-header type bits.
type PacketType uint8

// Packet types. The zero value is invalid so an unset type is noticed.
const (
	PacketTypeInitial PacketType = iota + 1
	PacketType0RTT
	PacketTypeHandshake
	PacketTypeRetry
	PacketTypeVersionNegotiation
	PacketType1RTT
)

// String returns the packet type name used in RFC 9000.
func (t PacketType) String() string {
	switch t {
	case PacketTypeInitial:
		return "Initial"
	case PacketType0RTT:
		return "0-RTT"
	case PacketTypeHandshake:
		return "Handshake"
	case PacketTypeRetry:
		return "Retry"
	case PacketTypeVersionNegotiation:
		return "Version Negotiation"
	case PacketType1RTT:
		return "1-RTT"
	}
	return "invalid packet type"
}

// longTypeBits returns the two long-header type bits (already shifted into
// bits 5-4) for t in version v. RFC 9369 section 3.2 rotates them in v2 so
// that middleboxes cannot ossify on v1's values.
func longTypeBits(v Version, t PacketType) byte {
	var bits byte
	switch t {
	case PacketTypeInitial:
		bits = 0
	case PacketType0RTT:
		bits = 1
	case PacketTypeHandshake:
		bits = 2
	case PacketTypeRetry:
		bits = 3
	default:
		panic("wire: no long header type bits for " + t.String())
	}
	if v == Version2 {
		bits = (bits + 1) & 3
	}
	return bits << 4
}

// longPacketType maps the first byte of a v1 or v2 long header to its type.
func longPacketType(v Version, b0 byte) PacketType {
	bits := (b0 >> 4) & 3
	if v == Version2 {
		bits = (bits + 3) & 3
	}
	return PacketTypeInitial + PacketType(bits)
}

// IsLongHeader reports whether a packet's first byte has the header form bit set.
func IsLongHeader(b0 byte) bool { return b0&0x80 != 0 }
