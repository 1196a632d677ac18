package flood

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Frame layout of a spoofed Initial: Ethernet II, IPv4 without options,
// UDP, and the 1200-byte Initial: 1242 bytes, the paper's frame size.
const (
	EthHeaderLen  = 14
	IPv4HeaderLen = 20
	UDPHeaderLen  = 8
	FrameLen      = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen + UDPPayloadSize

	etherTypeIPv4 = 0x0800
	protoUDP      = 17
	defaultTTL    = 64
)

// Errors from ParseFrame and AppendFrame.
var (
	ErrFrameTruncated = errors.New("flood: frame truncated")
	ErrNotIPv4UDP     = errors.New("flood: not an IPv4 UDP frame")
	ErrBadChecksum    = errors.New("flood: bad checksum")
	ErrFrameAddress   = errors.New("flood: frame addresses must be IPv4")
	ErrFrameTooLarge  = errors.New("flood: payload too large for one IPv4 packet")
)

// FrameHeader holds the fields of the Ethernet, IPv4 and UDP headers that
// vary between frames.
type FrameHeader struct {
	DstMAC, SrcMAC [6]byte
	// Src and Dst are IPv4 addresses and UDP ports.
	Src, Dst netip.AddrPort
	// TTL is the IPv4 time to live (0: 64 when building).
	TTL uint8
	// ID is the IPv4 identification field.
	ID uint16
}

// AppendFrame appends an Ethernet frame carrying payload in a UDP datagram
// from h.Src to h.Dst, with the IPv4 header checksum and the UDP checksum
// computed, and the Don't Fragment bit set.
func AppendFrame(b []byte, h *FrameHeader, payload []byte) ([]byte, error) {
	return appendFrame(b, h, payload, sum16(0, payload))
}

// appendFrame is AppendFrame with the payload's unfolded checksum sum
// given, so that pooled payloads are summed once, not per frame. The UDP
// header is 8 bytes, so the payload's 16-bit words stay aligned.
func appendFrame(b []byte, h *FrameHeader, payload []byte, payloadSum uint64) ([]byte, error) {
	if !h.Src.Addr().Is4() || !h.Dst.Addr().Is4() {
		return b, ErrFrameAddress
	}
	udpLen := UDPHeaderLen + len(payload)
	if IPv4HeaderLen+udpLen > 0xffff {
		return b, ErrFrameTooLarge
	}
	ttl := h.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	b = append(b, h.DstMAC[:]...)
	b = append(b, h.SrcMAC[:]...)
	b = binary.BigEndian.AppendUint16(b, etherTypeIPv4)

	ip := len(b)
	src, dst := h.Src.Addr().As4(), h.Dst.Addr().As4()
	b = append(b, 0x45, 0) // version 4, IHL 5; DSCP/ECN 0
	b = binary.BigEndian.AppendUint16(b, uint16(IPv4HeaderLen+udpLen))
	b = binary.BigEndian.AppendUint16(b, h.ID)
	b = append(b, 0x40, 0, ttl, protoUDP, 0, 0) // DF, offset 0, checksum later
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	binary.BigEndian.PutUint16(b[ip+10:], ^fold(sum16(0, b[ip:ip+IPv4HeaderLen])))

	udp := len(b)
	b = binary.BigEndian.AppendUint16(b, h.Src.Port())
	b = binary.BigEndian.AppendUint16(b, h.Dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	b = append(b, 0, 0)
	c := ^fold(sum16(pseudoSum(src, dst, udpLen)+payloadSum, b[udp:]))
	b = append(b, payload...)
	if c == 0 {
		c = 0xffff // zero means "no checksum" in UDP over IPv4
	}
	binary.BigEndian.PutUint16(b[udp+6:], c)
	return b, nil
}

// ParseFrame parses a frame built by AppendFrame (or any Ethernet II,
// IPv4, UDP frame), verifying the IPv4 header checksum and the UDP
// checksum when present, and returns the UDP payload, which aliases b.
func ParseFrame(b []byte, h *FrameHeader) ([]byte, error) {
	*h = FrameHeader{}
	if len(b) < EthHeaderLen+IPv4HeaderLen+UDPHeaderLen {
		return nil, ErrFrameTruncated
	}
	copy(h.DstMAC[:], b[0:6])
	copy(h.SrcMAC[:], b[6:12])
	if binary.BigEndian.Uint16(b[12:14]) != etherTypeIPv4 {
		return nil, ErrNotIPv4UDP
	}
	ip := b[EthHeaderLen:]
	if ip[0]>>4 != 4 {
		return nil, ErrNotIPv4UDP
	}
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if ihl < IPv4HeaderLen || total < ihl+UDPHeaderLen || total > len(ip) {
		return nil, ErrFrameTruncated
	}
	if ip[9] != protoUDP || binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 {
		return nil, ErrNotIPv4UDP // not UDP, or a fragment
	}
	if fold(sum16(0, ip[:ihl])) != 0xffff {
		return nil, ErrBadChecksum
	}
	src, dst := [4]byte(ip[12:16]), [4]byte(ip[16:20])
	h.TTL = ip[8]
	h.ID = binary.BigEndian.Uint16(ip[4:6])
	udp := ip[ihl:total]
	udpLen := int(binary.BigEndian.Uint16(udp[4:6]))
	if udpLen < UDPHeaderLen || udpLen > len(udp) {
		return nil, ErrFrameTruncated
	}
	udp = udp[:udpLen]
	if binary.BigEndian.Uint16(udp[6:8]) != 0 && fold(sum16(pseudoSum(src, dst, udpLen), udp)) != 0xffff {
		return nil, ErrBadChecksum
	}
	h.Src = netip.AddrPortFrom(netip.AddrFrom4(src), binary.BigEndian.Uint16(udp[0:2]))
	h.Dst = netip.AddrPortFrom(netip.AddrFrom4(dst), binary.BigEndian.Uint16(udp[2:4]))
	return udp[UDPHeaderLen:], nil
}

// sum16 adds b as big-endian 16-bit words (an odd last byte padded with
// zero) to acc without folding; 64 bits cannot overflow for any frame.
func sum16(acc uint64, b []byte) uint64 {
	for len(b) >= 8 {
		acc += uint64(binary.BigEndian.Uint16(b)) + uint64(binary.BigEndian.Uint16(b[2:])) +
			uint64(binary.BigEndian.Uint16(b[4:])) + uint64(binary.BigEndian.Uint16(b[6:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// fold reduces a one's complement sum to 16 bits.
func fold(acc uint64) uint16 {
	for acc > 0xffff {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// pseudoSum is the sum of the IPv4 pseudo-header of a UDP datagram.
func pseudoSum(src, dst [4]byte, udpLen int) uint64 {
	return sum16(sum16(uint64(protoUDP)+uint64(udpLen), src[:]), dst[:])
}
