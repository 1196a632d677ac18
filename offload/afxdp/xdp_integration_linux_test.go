package afxdp

import (
	"errors"
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/xdp"
)

// quicInitial returns a QUIC v1 Initial long header (RFC 9000 section
// 17.2.2) with an 8-byte DCID, padded to size bytes.
func quicInitial(size int, tag byte) []byte {
	p := make([]byte, size)
	p[0] = 0xc0                         // long header, fixed bit, type Initial
	p[1], p[2], p[3], p[4] = 0, 0, 0, 1 // version 1
	p[5] = 8                            // DCID length
	copy(p[6:14], []byte{tag, 2, 3, 4, 5, 6, 7, 8})
	// SCID length 0, token length 0, then a 2-byte Length varint.
	p[14], p[15] = 0, 0
	rest := size - 18
	p[16], p[17] = 0x40|byte(rest>>8), byte(rest)
	return p
}

// TestWithFastPathProgram runs the AF_XDP socket behind the real XDP fast
// path of package offload/xdp: a full-size Initial reaches the socket, a
// datagram to another port reaches the kernel stack, and a short Initial is
// dropped.
func TestWithFastPathProgram(t *testing.T) {
	nt := newTestNet(t, 1)
	const otherPort = 9002
	var s *Socket
	var p *xdp.Program
	var fdOther int
	nt.in(t, nt.nsB, func() {
		var err error
		p, err = xdp.Load(xdp.Config{Port: portB, StaleAfter: time.Hour, Queues: 4})
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("skipping: the kernel refuses the fast-path program: %v", err)
		}
		if err != nil {
			t.Fatalf("xdp.Load: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		if err := p.Beat(xdp.MonotonicNow()); err != nil {
			t.Fatal(err)
		}
		s, err = Open(nt.ifB, 0, smallConfig)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Register(p.XSKMap(), 0); err != nil {
			t.Fatal(err)
		}
		if err := p.Attach("trb0", xdp.ModeAuto); err != nil {
			t.Fatalf("Attach: %v", err)
		}
		fdOther = udpSocket(t, netip.AddrPortFrom(ipB, otherPort), netip.AddrPort{})
	})
	var fdA, fdA2 int
	nt.in(t, nt.nsA, func() {
		fdA = udpSocket(t, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
		fdA2 = udpSocket(t, netip.AddrPortFrom(ipA, portA+10), netip.AddrPortFrom(ipB, otherPort))
	})

	small := quicInitial(300, 0xee)
	if _, err := unix.Write(fdA, small); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fdA2, []byte("to the stack")); err != nil {
		t.Fatal(err)
	}
	full := quicInitial(1200, 0x11)
	if _, err := unix.Write(fdA, full); err != nil {
		t.Fatal(err)
	}
	receiveN(t, nt, s, 1, func(f *frame.UDP) {
		if string(f.Payload) != string(full) {
			t.Fatalf("AF_XDP got %d bytes %x..., want the full Initial", len(f.Payload), f.Payload[:min(16, len(f.Payload))])
		}
	})
	buf := make([]byte, 2048)
	if n, err := readUDP(fdOther, buf); err != nil || string(buf[:n]) != "to the stack" {
		t.Fatalf("stack socket: %q, %v", buf[:max(n, 0)], err)
	}
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c[xdp.AgentInitial] != 1 || c[xdp.DropSmallInitial] != 1 {
		t.Fatalf("counters: AgentInitial %d (want 1), DropSmallInitial %d (want 1)", c[xdp.AgentInitial], c[xdp.DropSmallInitial])
	}
}
