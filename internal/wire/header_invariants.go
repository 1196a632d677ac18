package wire

// InvariantHeader holds the version-independent fields of a long header
// (RFC 8999 section 5.1), enough to route a packet or answer with Version
// Negotiation without understanding its version.
type InvariantHeader struct {
	Version Version
	// DestConnID and SrcConnID point into the packet; up to 255 bytes each.
	DestConnID []byte
	SrcConnID  []byte
	// HeaderLen is the offset just past the source connection ID, where the
	// version-specific part begins.
	HeaderLen int
}

// ParseInvariantHeader parses the invariant fields of a long header of any
// version. It does not look at the fixed bit or the type bits.
func ParseInvariantHeader(b []byte, h *InvariantHeader) error {
	*h = InvariantHeader{}
	n, err := parseLongInvariants(b, &h.Version, &h.DestConnID, &h.SrcConnID)
	if err != nil {
		return err
	}
	h.HeaderLen = n
	return nil
}

// ParseDestConnID returns the destination connection ID of the first packet
// in a datagram, for demultiplexing: for a long header of any version the
// length comes from the packet, for a short header it is the local
// connection ID length shortCIDLen.
func ParseDestConnID(b []byte, shortCIDLen int) ([]byte, error) {
	if len(b) == 0 {
		return nil, ErrPacketTruncated
	}
	if !IsLongHeader(b[0]) {
		if len(b) < 1+shortCIDLen || shortCIDLen < 0 {
			return nil, ErrPacketTruncated
		}
		return b[1 : 1+shortCIDLen : 1+shortCIDLen], nil
	}
	if len(b) < 6 {
		return nil, ErrPacketTruncated
	}
	dl := int(b[5])
	if len(b) < 6+dl {
		return nil, ErrPacketTruncated
	}
	return b[6 : 6+dl : 6+dl], nil
}
