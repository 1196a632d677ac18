package interopendpoint

import (
	"errors"
	"net"
	"net/netip"

	"github.com/turboretry/turboretry/quic"
)

// preferredAddress is the preferred_address the connectionmigration server
// advertises: the first global unicast address of each family on this
// host's interfaces, at port. The server's socket is bound to [::]:port,
// so it receives what is sent to either. A client that reached us over
// one family can move to the other (the case's URLs name server46, which
// has both).
func preferredAddress(port int) (*quic.PreferredAddress, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	return pickPreferredAddress(addrs, uint16(port))
}

func pickPreferredAddress(addrs []net.Addr, port uint16) (*quic.PreferredAddress, error) {
	var pa quic.PreferredAddress
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() {
			continue
		}
		switch {
		case ip.Is4() && !pa.IPv4.IsValid():
			pa.IPv4 = netip.AddrPortFrom(ip, port)
		case ip.Is6() && !pa.IPv6.IsValid():
			pa.IPv6 = netip.AddrPortFrom(ip, port)
		}
	}
	if !pa.IPv4.IsValid() && !pa.IPv6.IsValid() {
		return nil, errors.New("interop: no global unicast address for a preferred address")
	}
	return &pa, nil
}
