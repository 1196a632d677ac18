package udpio

import "net/netip"

// unmapAddrPort reports an IPv4 peer of a dual-stack socket as plain IPv4, so that the
// transport sees one form of each address.
func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
