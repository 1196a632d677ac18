package quic

import (
	"net"
	"syscall"
)

// OOBCapablePacketConn is a socket that reads and writes UDP datagrams
// with control messages, as *net.UDPConn does; the interface is quic-go's.
// On a *net.UDPConn a Transport uses batched, offloaded I/O
// (internal/udpio); on another OOBCapablePacketConn (a wrapper) it writes
// each datagram with WriteMsgUDP, so the wrapper sees every write, and
// reads with ReadFrom.
type OOBCapablePacketConn interface {
	net.PacketConn
	SyscallConn() (syscall.RawConn, error)
	SetReadBuffer(int) error
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
}

// writeTo writes one datagram on the Transport's socket.
func (t *Transport) writeTo(b []byte, addr net.Addr) (int, error) {
	if _, plain := t.Conn.(*net.UDPConn); !plain {
		if oc, ok := t.Conn.(OOBCapablePacketConn); ok {
			if ua, ok := addr.(*net.UDPAddr); ok {
				n, _, err := oc.WriteMsgUDP(b, nil, ua)
				return n, err
			}
		}
	}
	return t.Conn.WriteTo(b, addr)
}
