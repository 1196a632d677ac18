package udpio

import (
	"encoding/binary"
	"math/bits"
	"net/netip"

	"github.com/turboretry/turboretry/internal/protocol"
	"golang.org/x/sys/unix"
)

// Control messages are read and written as bytes in the kernel's native layout:
// struct cmsghdr { size_t len; int level; int type; } followed by data, each message
// padded to the size of a long (the same as a pointer on every Linux port Go supports).
const (
	ptrSize    = bits.UintSize / 8
	cmsgHdrLen = unix.SizeofCmsghdr
)

// Control buffer sizes per message. Receive: UDP_GRO (int) + IP_PKTINFO + IPV6_PKTINFO
// (a dual-stack socket gets both for IPv4 datagrams) + IP_TOS or IPV6_TCLASS, with room
// to spare so nothing is cut (MSG_CTRUNC). Send: UDP_SEGMENT (u16) + one PKTINFO + IP_TOS
// or IPV6_TCLASS (int).
const (
	rxControlSize = 256
	txControlSize = 96
)

func cmsgAlign(n int) int { return (n + ptrSize - 1) &^ (ptrSize - 1) }

func cmsgSpace(dataLen int) int { return cmsgAlign(cmsgHdrLen) + cmsgAlign(dataLen) }

// rxInfo is what the receive path takes from the control messages.
type rxInfo struct {
	local   netip.Addr
	ifIndex int
	segSize int
	ecn     protocol.ECN
}

// parseControl walks received control messages. Unknown or malformed entries are
// skipped; a malformed length ends the walk (the kernel never produces one).
func parseControl(b []byte) rxInfo {
	var info rxInfo
	for len(b) >= cmsgHdrLen {
		var l uint64
		if ptrSize == 8 {
			l = binary.NativeEndian.Uint64(b)
		} else {
			l = uint64(binary.NativeEndian.Uint32(b))
		}
		if l < cmsgHdrLen || l > uint64(len(b)) {
			break
		}
		level := int32(binary.NativeEndian.Uint32(b[ptrSize:]))
		typ := int32(binary.NativeEndian.Uint32(b[ptrSize+4:]))
		data := b[cmsgAlign(cmsgHdrLen):l]
		switch {
		case level == unix.SOL_UDP && typ == unix.UDP_GRO && len(data) >= 4:
			info.segSize = int(int32(binary.NativeEndian.Uint32(data)))
		case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			// struct in_pktinfo { int ifindex; in_addr spec_dst; in_addr addr; }: addr is
			// the header's destination.
			info.ifIndex = int(int32(binary.NativeEndian.Uint32(data)))
			info.local = netip.AddrFrom4([4]byte(data[8:12]))
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			info.local = netip.AddrFrom16([16]byte(data[:16])).Unmap()
			info.ifIndex = int(binary.NativeEndian.Uint32(data[16:]))
		case level == unix.IPPROTO_IP && typ == unix.IP_TOS && len(data) >= 1:
			info.ecn = protocol.ECN(data[0] & 3)
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_TCLASS && len(data) >= 4:
			info.ecn = protocol.ECN(binary.NativeEndian.Uint32(data) & 3)
		}
		next := cmsgAlign(int(l))
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	if info.segSize < 0 {
		info.segSize = 0
	}
	return info
}

// putCmsg writes one control message with room for dataLen bytes and returns its data
// and the bytes it used. b must have cmsgSpace(dataLen) bytes.
func putCmsg(b []byte, level, typ int32, dataLen int) (data []byte, used int) {
	used = cmsgSpace(dataLen)
	clear(b[:used])
	if ptrSize == 8 {
		binary.NativeEndian.PutUint64(b, uint64(cmsgAlign(cmsgHdrLen)+dataLen))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(cmsgAlign(cmsgHdrLen)+dataLen))
	}
	binary.NativeEndian.PutUint32(b[ptrSize:], uint32(level))
	binary.NativeEndian.PutUint32(b[ptrSize+4:], uint32(typ))
	off := cmsgAlign(cmsgHdrLen)
	return b[off : off+dataLen], used
}

// buildTxControl writes the send-side control messages for one datagram or GSO buffer:
// UDP_SEGMENT when segSize > 0, the ECN codepoint when ecn is set (IP_TOS towards an IPv4
// peer, IPV6_TCLASS towards an IPv6 one: a dual-stack socket sends to IPv4 peers through
// the IPv4 path, which reads only IP_TOS), and a PKTINFO choosing the source address
// and/or the interface when either is set. It returns the control length.
func buildTxControl(b []byte, segSize int, ecn protocol.ECN, to netip.AddrPort, local netip.Addr, ifIndex int, v6 bool) (int, error) {
	n := 0
	if segSize > 0 {
		data, used := putCmsg(b, unix.SOL_UDP, unix.UDP_SEGMENT, 2)
		binary.NativeEndian.PutUint16(data, uint16(segSize))
		n += used
	}
	if ecn != protocol.ECNNotECT {
		level, typ := int32(unix.IPPROTO_IP), int32(unix.IP_TOS)
		if v6 && !to.Addr().Unmap().Is4() {
			level, typ = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
		}
		data, used := putCmsg(b[n:], level, typ, 4)
		binary.NativeEndian.PutUint32(data, uint32(ecn&3))
		n += used
	}
	if !local.IsValid() && ifIndex == 0 {
		return n, nil
	}
	if v6 {
		// On a dual-stack socket the kernel also takes an IPv4 source in this form
		// (::ffff:a.b.c.d) for an IPv4 destination.
		data, used := putCmsg(b[n:], unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, unix.SizeofInet6Pktinfo)
		if local.IsValid() {
			a16 := local.As16()
			copy(data[:16], a16[:])
		}
		binary.NativeEndian.PutUint32(data[16:], uint32(ifIndex))
		return n + used, nil
	}
	if local.IsValid() && !local.Unmap().Is4() {
		return 0, ErrAddrFamily
	}
	data, used := putCmsg(b[n:], unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo)
	binary.NativeEndian.PutUint32(data, uint32(ifIndex))
	if local.IsValid() {
		a4 := local.Unmap().As4()
		copy(data[4:8], a4[:]) // ipi_spec_dst: the source address to use
	}
	return n + used, nil
}
