package quic

import (
	"net"
	"net/netip"
)

// sender returns who sent p in the form tokens and admission use: an
// IPv4-mapped address unmapped. It does not allocate.
func (p *receivedPacket) sender() netip.AddrPort {
	if p.addrPort.IsValid() {
		return netip.AddrPortFrom(p.addrPort.Addr().Unmap(), p.addrPort.Port())
	}
	return addrPortOf(p.remote)
}

// remoteAddr returns the sender as a net.Addr, made on first use: it
// allocates, which a datagram answered statelessly (a flood's) must not.
func (p *receivedPacket) remoteAddr() net.Addr {
	if p.remote == nil {
		p.remote = net.UDPAddrFromAddrPort(p.addrPort)
	}
	return p.remote
}

// replyTo sends one datagram to p's sender, for the Transport's stateless
// answers; a failure is a lost datagram. On a *net.UDPConn it does not
// allocate.
func (t *Transport) replyTo(p *receivedPacket, b []byte) {
	if uc, ok := t.Conn.(*net.UDPConn); ok && p.addrPort.IsValid() {
		_, _ = uc.WriteToUDPAddrPort(b, p.addrPort)
		return
	}
	_ = t.write(b, p.remoteAddr())
}
