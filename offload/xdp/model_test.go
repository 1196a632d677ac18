//go:build linux

package xdp

import "encoding/binary"

// modelVerdict is the verdict the program must give frame, written from
// the package documentation in plain Go for FuzzVerdict: the agent is
// alive, the port is port, the cache holds CIDs of cidLen bytes for which
// inCache is true, authenticated server IDs of cidLen bytes are those for
// which verify is true (nil: none), and no AF_XDP socket is registered.
func modelVerdict(frame []byte, port uint16, cidLen int, inCache, verify func([]byte) bool) (uint32, Reason) {
	if len(frame) < 14 {
		return xdpPass, PassOther
	}
	var udp []byte // from the UDP header to the end of the frame
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		ip := frame[14:]
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 17 {
			return xdpPass, PassOther
		}
		ihl := int(ip[0]&0x0f) * 4
		if ihl < 20 {
			return xdpPass, PassOther
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 { // MF or offset
			return xdpPass, PassUnparsed
		}
		if len(ip) < ihl {
			return xdpPass, PassOther
		}
		udp = ip[ihl:]
	case 0x86dd:
		ip := frame[14:]
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return xdpPass, PassOther
		}
		switch ip[6] {
		case 17:
		case 0, 43, 44, 60, 51, 135:
			return xdpPass, PassUnparsed
		default:
			return xdpPass, PassOther
		}
		udp = ip[40:]
	default:
		return xdpPass, PassOther
	}
	if len(udp) < 8 || binary.BigEndian.Uint16(udp[2:]) != port {
		return xdpPass, PassOther
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < 8 {
		return xdpDrop, DropMalformed
	}
	plen, q := ulen-8, udp[8:]
	if plen < 1 || len(q) < 1 {
		return xdpDrop, DropMalformed
	}
	off := 1
	if q[0]&0x80 != 0 {
		if plen < 6 || len(q) < 6 {
			return xdpDrop, DropMalformed
		}
		typ := (q[0] >> 4) & 3
		switch v := binary.BigEndian.Uint32(q[1:]); v {
		case 0:
			return xdpDrop, DropUnexpected
		case 1:
		case 0x6b3343cf: // QUIC v2 rotates the type bits (RFC 9369)
			typ = (typ + 3) & 3
		default:
			return xdpPass, PassNoSocket
		}
		switch typ {
		case typeInitial:
			if plen < 1200 {
				return xdpDrop, DropSmallInitial
			}
			return xdpPass, PassNoSocket
		case typeRetry:
			return xdpDrop, DropUnexpected
		}
		if q[5] > 20 {
			return xdpDrop, DropMalformed
		}
		if int(q[5]) < cidLen {
			return xdpDrop, DropCIDLen
		}
		off = 6
	}
	if plen < off+20 || len(q) < off+20 {
		return xdpDrop, DropMalformed
	}
	if verify != nil && (off == 1 || int(q[5]) == cidLen) && verify(q[off:off+cidLen]) {
		return xdpPass, PassMAC
	}
	if inCache(q[off : off+cidLen]) {
		return xdpPass, PassHit
	}
	return xdpDrop, DropMiss
}
