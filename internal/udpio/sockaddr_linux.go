package udpio

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// sockaddrSize is room for the larger of sockaddr_in and sockaddr_in6.
const sockaddrSize = unix.SizeofSockaddrInet6

// decodeSockaddr reads a raw sockaddr_in / sockaddr_in6 as filled in by the kernel.
// IPv4-mapped IPv6 addresses are unmapped; a scope id becomes a numeric zone.
func decodeSockaddr(b []byte) (netip.AddrPort, bool) {
	if len(b) < 2 {
		return netip.AddrPort{}, false
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < 8 {
			return netip.AddrPort{}, false
		}
		port := binary.BigEndian.Uint16(b[2:])
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case unix.AF_INET6:
		if len(b) < 24 {
			return netip.AddrPort{}, false
		}
		port := binary.BigEndian.Uint16(b[2:])
		ip := netip.AddrFrom16([16]byte(b[8:24]))
		if ip.Is4In6() {
			return netip.AddrPortFrom(ip.Unmap(), port), true
		}
		if len(b) >= 28 {
			if scope := binary.NativeEndian.Uint32(b[24:28]); scope != 0 {
				// Small numbers come from a static table: no allocation for them.
				ip = ip.WithZone(strconv.FormatUint(uint64(scope), 10))
			}
		}
		return netip.AddrPortFrom(ip, port), true
	}
	return netip.AddrPort{}, false
}

// encodeSockaddr writes ap into b (at least sockaddrSize bytes) in the form the socket
// family wants: sockaddr_in for an IPv4 socket, sockaddr_in6 (IPv4 as ::ffff:a.b.c.d) for
// an IPv6 one. It returns the length to pass to the kernel.
func encodeSockaddr(b []byte, ap netip.AddrPort, v6 bool) (int, error) {
	ip := ap.Addr()
	if !ip.IsValid() {
		return 0, ErrInvalidAddr
	}
	clear(b[:sockaddrSize])
	if !v6 {
		if !ip.Unmap().Is4() {
			return 0, ErrAddrFamily
		}
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a4 := ip.Unmap().As4()
		copy(b[4:8], a4[:])
		return unix.SizeofSockaddrInet4, nil
	}
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a16 := ip.As16()
	copy(b[8:24], a16[:])
	if zone := ip.Zone(); zone != "" {
		binary.NativeEndian.PutUint32(b[24:], zoneIndex(zone))
	}
	return unix.SizeofSockaddrInet6, nil
}

// zoneIndex turns an IPv6 zone (numeric, or an interface name) into a scope id.
func zoneIndex(zone string) uint32 {
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n)
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}
