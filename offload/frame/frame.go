package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Header sizes of the frames built and parsed here (no VLAN tag, no IPv4
// options on output, no IPv6 extension headers).
const (
	EthHeaderLen  = 14
	IPv4HeaderLen = 20
	IPv6HeaderLen = 40
	UDPHeaderLen  = 8

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	protoUDP      = 17
	defaultTTL    = 64
)

// Frame errors, distinct so a datapath can count drops by cause.
var (
	ErrShort       = errors.New("frame: frame truncated")
	ErrNotUDP      = errors.New("frame: not an Ethernet IPv4/IPv6 UDP frame")
	ErrFragment    = errors.New("frame: IPv4 fragment")
	ErrBadHeader   = errors.New("frame: inconsistent IP or UDP header")
	ErrBadChecksum = errors.New("frame: bad checksum")
	ErrBadAddress  = errors.New("frame: addresses not both IPv4 or both IPv6")
	ErrNoSpace     = errors.New("frame: frame does not fit")
)

// MAC is an Ethernet address.
type MAC [6]byte

// UDP is the content of an Ethernet + IPv4/IPv6 + UDP frame.
type UDP struct {
	Dst, Src         MAC
	SrcIP, DstIP     netip.Addr // both IPv4 or both IPv6
	SrcPort, DstPort uint16
	// TTL is the IPv4 TTL or IPv6 hop limit; 0 means 64 when encoding.
	TTL uint8
	// TOS is the IPv4 TOS byte or IPv6 traffic class (DSCP and ECN).
	TOS uint8
	// ID is the IPv4 identification field (unused for IPv6). Encode sets
	// Don't Fragment, so any value is valid (RFC 6864).
	ID uint16
	// Payload is the UDP payload. Parse returns it in place (a view
	// into the frame, without Ethernet padding).
	Payload []byte
}

// IPv6 reports whether the frame carries IPv6 (after unmapping
// IPv4-mapped addresses).
func (f *UDP) IPv6() bool { return !f.SrcIP.Unmap().Is4() }

// HeaderLen is the length of the headers Encode writes in front of the
// payload: the payload of an encoded frame starts at this offset.
func (f *UDP) HeaderLen() int {
	if f.IPv6() {
		return EthHeaderLen + IPv6HeaderLen + UDPHeaderLen
	}
	return EthHeaderLen + IPv4HeaderLen + UDPHeaderLen
}

// Len is the length of the encoded frame.
func (f *UDP) Len() int { return f.HeaderLen() + len(f.Payload) }

// Encode writes the frame into buf with both checksums and returns its
// length. The payload may already sit at buf[f.HeaderLen():] (Payload a
// slice of it), in which case it is not moved: a datapath builds the
// payload in the UMEM frame and adds headers last. Encode does not allocate.
func (f *UDP) Encode(buf []byte) (int, error) {
	return f.EncodeWithSum(buf, PayloadSum(f.Payload))
}

// PayloadSum is the unfolded ones' complement sum of a UDP payload, for
// EncodeWithSum.
func PayloadSum(payload []byte) uint32 { return sum(payload, 0) }

// EncodeWithSum is Encode with payloadSum, PayloadSum(f.Payload), given by
// the caller: a sender that puts one payload in many frames (a flood pool)
// sums it once instead of once per frame. A wrong payloadSum gives a frame
// with a bad UDP checksum.
func (f *UDP) EncodeWithSum(buf []byte, payloadSum uint32) (int, error) {
	src, dst := f.SrcIP.Unmap(), f.DstIP.Unmap()
	v6 := src.Is6()
	if !src.IsValid() || !dst.IsValid() || dst.Is6() != v6 {
		return 0, fmt.Errorf("%w: %v -> %v", ErrBadAddress, f.SrcIP, f.DstIP)
	}
	hl := f.HeaderLen()
	udpLen := UDPHeaderLen + len(f.Payload)
	maxUDP := 0xffff
	if !v6 {
		maxUDP -= IPv4HeaderLen
	}
	if udpLen > maxUDP {
		return 0, fmt.Errorf("%w: %d-byte payload too large for UDP", ErrNoSpace, len(f.Payload))
	}
	n := hl + len(f.Payload)
	if len(buf) < n {
		return 0, fmt.Errorf("%w: need %d bytes, have %d", ErrNoSpace, n, len(buf))
	}
	copy(buf[hl:], f.Payload) // no-op when Payload already sits there
	copy(buf[0:6], f.Dst[:])
	copy(buf[6:12], f.Src[:])
	ttl := f.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	var udp []byte
	var pseudo uint32
	if v6 {
		binary.BigEndian.PutUint16(buf[12:], etherTypeIPv6)
		ip := buf[EthHeaderLen : EthHeaderLen+IPv6HeaderLen]
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(f.TOS)<<20)
		binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
		ip[6] = protoUDP
		ip[7] = ttl
		s16, d16 := src.As16(), dst.As16()
		copy(ip[8:24], s16[:])
		copy(ip[24:40], d16[:])
		pseudo = sum(ip[8:40], 0) + protoUDP + uint32(udpLen)
		udp = buf[EthHeaderLen+IPv6HeaderLen : n]
	} else {
		binary.BigEndian.PutUint16(buf[12:], etherTypeIPv4)
		ip := buf[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]
		ip[0] = 0x45
		ip[1] = f.TOS
		binary.BigEndian.PutUint16(ip[2:], uint16(IPv4HeaderLen+udpLen))
		binary.BigEndian.PutUint16(ip[4:], f.ID)
		binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF: QUIC sets DF
		ip[8] = ttl
		ip[9] = protoUDP
		ip[10], ip[11] = 0, 0
		s4, d4 := src.As4(), dst.As4()
		copy(ip[12:16], s4[:])
		copy(ip[16:20], d4[:])
		binary.BigEndian.PutUint16(ip[10:], fold(sum(ip, 0)))
		pseudo = sum(ip[12:20], 0) + protoUDP + uint32(udpLen)
		udp = buf[EthHeaderLen+IPv4HeaderLen : n]
	}
	binary.BigEndian.PutUint16(udp[0:], f.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], f.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[6], udp[7] = 0, 0
	// The UDP header is 8 bytes, so the payload's words stay aligned and
	// its sum adds on (end-around carry) to that of the pseudo-header.
	acc := uint64(pseudo) + uint64(payloadSum)
	c := fold(sum(udp[:UDPHeaderLen], uint32(acc)+uint32(acc>>32)))
	if c == 0 {
		c = 0xffff // 0 means "no checksum" in IPv4 and is invalid in IPv6
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	return n, nil
}

// Parse parses an Ethernet frame carrying UDP over IPv4 (options
// allowed, fragments refused) or IPv6 (no extension headers), checks the IPv4
// header checksum and the UDP checksum (required for IPv6, optional for
// IPv4), and returns its fields with Payload a view into b. It does not
// allocate.
func Parse(b []byte) (UDP, error) { return parseFrame(b, true) }

// ParseLax is Parse without the UDP checksum check (the IPv4
// header checksum is still checked). Frames that a local kernel sent over a
// veth or other virtual link carry CHECKSUM_PARTIAL: the checksum field holds
// only the pseudo-header sum, since the "hardware" was to finish it, and
// Parse rejects them.
func ParseLax(b []byte) (UDP, error) { return parseFrame(b, false) }

func parseFrame(b []byte, udpChecksum bool) (UDP, error) {
	var f UDP
	if len(b) < EthHeaderLen {
		return f, fmt.Errorf("%w: %d bytes", ErrShort, len(b))
	}
	copy(f.Dst[:], b[0:6])
	copy(f.Src[:], b[6:12])
	var udp []byte
	var pseudo uint32 // pseudo-header sum, when the UDP checksum is checked
	check := false
	switch binary.BigEndian.Uint16(b[12:]) {
	case etherTypeIPv4:
		ip := b[EthHeaderLen:]
		if len(ip) < IPv4HeaderLen {
			return f, fmt.Errorf("%w: IPv4 header", ErrShort)
		}
		ihl := int(ip[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		switch {
		case ip[0]>>4 != 4:
			return f, fmt.Errorf("%w: IP version %d in an IPv4 frame", ErrBadHeader, ip[0]>>4)
		case ihl < IPv4HeaderLen:
			return f, fmt.Errorf("%w: IPv4 header length %d", ErrBadHeader, ihl)
		case total > len(ip):
			return f, fmt.Errorf("%w: IPv4 total length %d, %d bytes present", ErrShort, total, len(ip))
		case total < ihl:
			return f, fmt.Errorf("%w: IPv4 total length %d under header length %d", ErrBadHeader, total, ihl)
		}
		if fold(sum(ip[:ihl], 0)) != 0 {
			return f, fmt.Errorf("%w: IPv4 header", ErrBadChecksum)
		}
		if ip[9] != protoUDP {
			return f, fmt.Errorf("%w: IPv4 protocol %d", ErrNotUDP, ip[9])
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 { // MF or an offset
			return f, ErrFragment
		}
		f.TOS, f.TTL = ip[1], ip[8]
		f.ID = binary.BigEndian.Uint16(ip[4:])
		f.SrcIP = netip.AddrFrom4([4]byte(ip[12:16]))
		f.DstIP = netip.AddrFrom4([4]byte(ip[16:20]))
		udp = ip[ihl:total]
		if len(udp) >= UDPHeaderLen && binary.BigEndian.Uint16(udp[6:]) != 0 {
			check = true
			pseudo = sum(ip[12:20], 0) + protoUDP + uint32(binary.BigEndian.Uint16(udp[4:]))
		}
	case etherTypeIPv6:
		ip := b[EthHeaderLen:]
		if len(ip) < IPv6HeaderLen {
			return f, fmt.Errorf("%w: IPv6 header", ErrShort)
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		switch {
		case ip[0]>>4 != 6:
			return f, fmt.Errorf("%w: IP version %d in an IPv6 frame", ErrBadHeader, ip[0]>>4)
		case ip[6] != protoUDP:
			return f, fmt.Errorf("%w: IPv6 next header %d", ErrNotUDP, ip[6])
		case plen > len(ip)-IPv6HeaderLen:
			return f, fmt.Errorf("%w: IPv6 payload length %d, %d bytes present", ErrShort, plen, len(ip)-IPv6HeaderLen)
		}
		f.TOS = uint8(binary.BigEndian.Uint16(ip[0:]) >> 4)
		f.TTL = ip[7]
		f.SrcIP = netip.AddrFrom16([16]byte(ip[8:24]))
		f.DstIP = netip.AddrFrom16([16]byte(ip[24:40]))
		udp = ip[IPv6HeaderLen : IPv6HeaderLen+plen]
		if len(udp) >= UDPHeaderLen {
			if binary.BigEndian.Uint16(udp[6:]) == 0 {
				if udpChecksum {
					return f, fmt.Errorf("%w: zero UDP checksum over IPv6", ErrBadChecksum)
				}
			}
			check = true
			pseudo = sum(ip[8:40], 0) + protoUDP + uint32(binary.BigEndian.Uint16(udp[4:]))
		}
	default:
		return f, fmt.Errorf("%w: EtherType %#04x", ErrNotUDP, binary.BigEndian.Uint16(b[12:]))
	}
	if len(udp) < UDPHeaderLen {
		return f, fmt.Errorf("%w: UDP header", ErrShort)
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < UDPHeaderLen || ulen > len(udp) {
		return f, fmt.Errorf("%w: UDP length %d in %d bytes", ErrBadHeader, ulen, len(udp))
	}
	udp = udp[:ulen]
	if check && udpChecksum && fold(sum(udp, pseudo)) != 0 {
		return f, fmt.Errorf("%w: UDP", ErrBadChecksum)
	}
	f.SrcPort = binary.BigEndian.Uint16(udp[0:])
	f.DstPort = binary.BigEndian.Uint16(udp[2:])
	f.Payload = udp[UDPHeaderLen:]
	return f, nil
}

// sum adds b as big-endian 16-bit words (an odd last byte padded with
// zero) to acc, the Internet checksum's ones' complement sum before folding.
func sum(b []byte, acc uint32) uint32 {
	s := uint64(acc)
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		s += v>>48 + v>>32&0xffff + v>>16&0xffff + v&0xffff
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s > 0xffffffff {
		s = s>>32 + s&0xffffffff
	}
	return uint32(s)
}

// fold turns a sum into the checksum field value (its complement): 0 when
// a sum over data that includes a correct checksum is checked.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}
