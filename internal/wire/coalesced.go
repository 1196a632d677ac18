package wire

import "iter"

// SplitCoalesced returns the first QUIC packet of a datagram and the bytes
// after it (RFC 9000 section 12.2). Only Initial, 0-RTT and Handshake
// packets of a supported version carry a Length field; any other packet
// (short header, Retry, Version Negotiation, unknown version) extends to
// the end of the datagram, so rest is empty. On error the caller drops
// the remainder of the datagram but keeps packets already split off.
func SplitCoalesced(datagram []byte) (packet, rest []byte, err error) {
	if len(datagram) == 0 {
		return nil, nil, ErrPacketTruncated
	}
	if !IsLongHeader(datagram[0]) {
		return datagram, nil, nil
	}
	var h LongHeader
	if err := ParseLongHeader(datagram, &h); err != nil {
		if err == ErrUnsupportedVersion {
			return datagram, nil, nil
		}
		return nil, nil, err
	}
	return datagram[:h.PacketLen:h.PacketLen], datagram[h.PacketLen:], nil
}

// CoalescedPackets iterates over the packets of a datagram with
// SplitCoalesced; iteration stops after the first error.
func CoalescedPackets(datagram []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		rest := datagram
		for len(rest) > 0 {
			pkt, r, err := SplitCoalesced(rest)
			if !yield(pkt, err) || err != nil {
				return
			}
			rest = r
		}
	}
}
