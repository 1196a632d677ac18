// Package coalesced splits the QUIC packets a test captured out of their
// datagrams (RFC 9000 section 12.2). The stack itself never splits a whole
// datagram up front (it reads one packet at a time as it removes
// protection), so this lives with the test support.
package coalesced

import (
	"iter"

	"github.com/turboretry/turboretry/internal/wire"
)

// Split returns the first QUIC packet of a datagram and the bytes after
// it. Only Initial, 0-RTT and Handshake packets of a supported version
// carry a Length field; any other packet (short header, Retry, Version
// Negotiation, unknown version) extends to the end of the datagram, so
// rest is empty. On error the caller drops the remainder of the datagram
// but keeps packets already split off.
func Split(datagram []byte) (packet, rest []byte, err error) {
	if len(datagram) == 0 {
		return nil, nil, wire.ErrPacketTruncated
	}
	if !wire.IsLongHeader(datagram[0]) {
		return datagram, nil, nil
	}
	var h wire.LongHeader
	if err := wire.ParseLongHeader(datagram, &h); err != nil {
		if err == wire.ErrUnsupportedVersion {
			return datagram, nil, nil
		}
		return nil, nil, err
	}
	return datagram[:h.PacketLen:h.PacketLen], datagram[h.PacketLen:], nil
}

// Packets iterates over the packets of a datagram with Split; iteration
// stops after the first error.
func Packets(datagram []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		rest := datagram
		for len(rest) > 0 {
			pkt, r, err := Split(rest)
			if !yield(pkt, err) || err != nil {
				return
			}
			rest = r
		}
	}
}
