package wire

import (
	"encoding/binary"
	"math/rand/v2"
)

// Helpers that only this package's tests use: the stack reads packet
// numbers as it removes header protection (handshake.Opener), builds the
// Retry pseudo-packet in internal/handshake (withPseudoPacket) and Version
// Negotiation packets in internal/stateless (Responder.AppendVersionNegotiation).

// PacketNumberLenFromFirstByte returns the packet number length encoded in
// the first byte. Only meaningful after header protection is removed.
func PacketNumberLenFromFirstByte(b0 byte) int { return int(b0&3) + 1 }

// ReadPacketNumber reads an n-byte (1-4) truncated packet number from the
// start of b, after header protection is removed.
func ReadPacketNumber(b []byte, n int) (uint64, error) {
	if n < 1 || n > 4 {
		return 0, ErrInvalidPacketNumber
	}
	if len(b) < n {
		return 0, ErrPacketTruncated
	}
	var pn uint64
	for _, c := range b[:n] {
		pn = pn<<8 | uint64(c)
	}
	return pn, nil
}

// AppendRetryPseudoPacket appends the Retry pseudo-packet that the Retry
// Integrity Tag is computed over (RFC 9001 section 5.8): the original
// destination connection ID with a length byte, followed by the Retry
// packet without its tag. For a received Retry pass
// packet[:len(packet)-RetryIntegrityTagLen]. An ODCID longer than 255
// bytes panics.
func AppendRetryPseudoPacket(b []byte, odcid, retryWithoutTag []byte) []byte {
	if len(odcid) > 255 {
		panic("wire: original destination connection ID longer than 255 bytes")
	}
	b = append(b, byte(len(odcid)))
	b = append(b, odcid...)
	return append(b, retryWithoutTag...)
}

// AppendVersionNegotiation appends a Version Negotiation packet answering a
// client packet with the connection IDs clientDCID and clientSCID. As RFC
// 9000 section 17.2.1 requires, the client's source connection ID becomes
// the destination connection ID and vice versa. The unused bits of the
// first byte are random except 0x40, which is set so the packet looks like
// it has a fixed bit. Connection IDs longer than 255 bytes panic.
func AppendVersionNegotiation(b []byte, clientDCID, clientSCID []byte, versions []Version) []byte {
	b = AppendVersionNegotiationHeader(b, byte(rand.Uint32()), clientDCID, clientSCID)
	for _, v := range versions {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}
