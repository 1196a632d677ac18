package udpio

import (
	"net/netip"
	"testing"
)

// TestPacketInfoIPv4: a receiver bound to 0.0.0.0 learns that datagrams were sent to
// 127.0.0.1, and a sender bound to 0.0.0.0 can pick its source address per message.
func TestPacketInfoIPv4(t *testing.T) {
	rc := listenUDP(t, "udp4", "0.0.0.0:0")
	sc := listenUDP(t, "udp4", "0.0.0.0:0")
	rcaps := setupConn(t, rc, Config{DisableGRO: true})
	if !rcaps.PacketInfo {
		t.Skip("kernel refused IP_PKTINFO")
	}
	w, r := writerReader(t, sc, WriterConfig{}, rc, 0)
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addrPort(rc).Port())
	// All of 127/8 is local on Linux: 127.0.0.2 is a source the kernel would not pick.
	src2 := netip.MustParseAddr("127.0.0.2")
	msgs := []Message{
		{Buf: []byte("default source"), Addr: to},
		{Buf: []byte("chosen source"), Addr: to, Local: src2},
	}
	if n, err := w.WriteBatch(msgs); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	got := readDatagrams(t, rc, r, 2, 1500)
	sport := addrPort(sc).Port()
	if got[0].from != netip.AddrPortFrom(to.Addr(), sport) || got[1].from != netip.AddrPortFrom(src2, sport) {
		t.Fatalf("sources %v, %v; want 127.0.0.1 then 127.0.0.2 (port %d)", got[0].from, got[1].from, sport)
	}
	for i, g := range got {
		if g.local != to.Addr() {
			t.Fatalf("datagram %d: destination %v, want 127.0.0.1", i, g.local)
		}
	}

	// A source address the host does not have is refused, not silently replaced.
	bad := []Message{{Buf: []byte("x"), Addr: to, Local: netip.MustParseAddr("192.0.2.1")}}
	if n, err := w.WriteBatch(bad); n != 0 || err == nil {
		t.Fatalf("WriteBatch from a foreign source = %d, %v; want an error", n, err)
	}
	// An IPv6 source on an IPv4 socket is a caller error.
	bad[0].Local = netip.MustParseAddr("::1")
	if n, err := w.WriteBatch(bad); n != 0 || !errorsIs(err, ErrAddrFamily) {
		t.Fatalf("WriteBatch with IPv6 source = %d, %v; want ErrAddrFamily", n, err)
	}
}

func TestPacketInfoIPv6(t *testing.T) {
	rc := listenUDP(t, "udp6", "[::]:0")
	sc := listenUDP(t, "udp6", "[::1]:0")
	rcaps := setupConn(t, rc, Config{DisableGRO: true})
	if !rcaps.PacketInfo {
		t.Skip("kernel refused IPV6_RECVPKTINFO")
	}
	w, r := writerReader(t, sc, WriterConfig{}, rc, 0)
	loop := netip.IPv6Loopback()
	to := netip.AddrPortFrom(loop, addrPort(rc).Port())
	if n, err := w.WriteBatch([]Message{{Buf: []byte("v6"), Addr: to, Local: loop}}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	got := readDatagrams(t, rc, r, 1, 1500)
	if got[0].local != loop || got[0].from != addrPort(sc) {
		t.Fatalf("got destination %v from %v, want ::1 from %v", got[0].local, got[0].from, addrPort(sc))
	}
}

// TestBadDestinations: invalid messages return an error naming the message, after the
// valid ones before it were sent.
func TestBadDestinations(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	w, r := writerReader(t, sc, WriterConfig{}, rc, 0)
	ok := Message{Buf: []byte("ok"), Addr: addrPort(rc)}
	cases := []struct {
		bad  Message
		want error
	}{
		{Message{Buf: []byte("x")}, ErrInvalidAddr},
		{Message{Buf: []byte("x"), Addr: netip.MustParseAddrPort("[::1]:9")}, ErrAddrFamily},
		{Message{Buf: make([]byte, 100), Addr: addrPort(rc), SegmentSize: -1}, ErrSegmentSize},
		{Message{Buf: make([]byte, 65*10), Addr: addrPort(rc), SegmentSize: 10}, ErrTooManySegments},
	}
	for _, c := range cases {
		n, err := w.WriteBatch([]Message{ok, c.bad, ok})
		if n != 1 || !errorsIs(err, c.want) {
			t.Fatalf("WriteBatch = %d, %v; want 1, %v", n, err, c.want)
		}
		checkDatagrams(t, readDatagrams(t, rc, r, 1, 100), [][]byte{[]byte("ok")}, addrPort(sc))
	}
}
