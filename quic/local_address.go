package quic

import "net/netip"

// Our address on a path. A server's socket bound to the unspecified
// address (say [::]:443) receives for every address of the host; the
// kernel would pick the source of our datagrams by route, which on a host
// with several addresses of a family need not be the address the client
// sent to, and a client drops datagrams from an address it did not send to
// (for instance ngtcp2's, probing a preferred address from the socket it
// already uses). So a server, on sockets that report the destination of
// received datagrams (IP_PKTINFO, internal/udpio), tells paths apart by
// both ends and sends from the address the client sends to.

// noteLocal records our address of the datagram being processed: the
// current path's on the first datagram, and a datagram to another of our
// addresses counts as coming on another path. ps.rx is set; *local is
// our address on the current path.
func (ps *pathState) noteLocal(isClient bool, local *netip.Addr) {
	if isClient || !ps.rx.local.IsValid() {
		ps.rx.local = *local
		return
	}
	if !local.IsValid() {
		*local = ps.rx.local
		return
	}
	if ps.rx.local != *local {
		ps.rx.other = true
	}
}
