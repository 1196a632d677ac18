package udpio

import (
	"fmt"
	"net"
)

// The portable path: one datagram per system call through the standard library. It is
// what Reader and Writer use on systems other than Linux, and it is compiled (and
// tested) everywhere.

// readOne receives one datagram into msgs[0].
func readOne(c *net.UDPConn, msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	m := &msgs[0]
	n, addr, err := c.ReadFromUDPAddrPort(m.Buf)
	if err != nil {
		return 0, err
	}
	*m = Message{Buf: m.Buf, N: n, Addr: unmapAddrPort(addr)}
	return 1, nil
}

// writeEach sends msgs one datagram (one segment) at a time. Source address and
// interface selection are not available here and are ignored.
func writeEach(c *net.UDPConn, msgs []Message) (int, error) {
	for i := range msgs {
		m := &msgs[i]
		if !m.Addr.Addr().IsValid() {
			return i, fmt.Errorf("udpio: message %d: %w", i, ErrInvalidAddr)
		}
		if err := validateSegments(m); err != nil {
			return i, fmt.Errorf("udpio: message %d: %w", i, err)
		}
		seg := m.SegmentSize
		if seg <= 0 {
			seg = len(m.Buf)
		}
		m.N = 0
		for off := 0; ; {
			end := min(off+seg, len(m.Buf))
			n, err := c.WriteToUDPAddrPort(m.Buf[off:end], m.Addr)
			if err != nil {
				return i, err
			}
			m.N += n
			off = end
			if off >= len(m.Buf) {
				break
			}
		}
	}
	return len(msgs), nil
}
