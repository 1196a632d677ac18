package udpio

import (
	"net/netip"
	"testing"
	"time"
)

// TestDualStackUnmapsIPv4: on a [::] socket an IPv4 peer is reported as plain IPv4 (not
// ::ffff:127.0.0.1), the destination too, and a reply to that address gets back to it.
func TestDualStackUnmapsIPv4(t *testing.T) {
	dc := listenUDP(t, "udp", ":0")
	caps := setupConn(t, dc, Config{DisableGRO: true})
	if !caps.DualStack {
		t.Skip("the wildcard socket is not dual-stack here")
	}
	v4 := listenUDP(t, "udp4", "127.0.0.1:0")
	v6 := listenUDP(t, "udp6", "[::1]:0")
	port := addrPort(dc).Port()
	if _, err := v4.WriteToUDPAddrPort([]byte("from v4"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)); err != nil {
		t.Fatal(err)
	}
	if _, err := v6.WriteToUDPAddrPort([]byte("from v6"), netip.AddrPortFrom(netip.IPv6Loopback(), port)); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(dc, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := readDatagrams(t, dc, r, 2, 1500)
	if got[0].from != addrPort(v4) || !got[0].from.Addr().Is4() {
		t.Fatalf("IPv4 peer reported as %v, want %v", got[0].from, addrPort(v4))
	}
	if got[1].from != addrPort(v6) {
		t.Fatalf("IPv6 peer reported as %v, want %v", got[1].from, addrPort(v6))
	}
	if caps.PacketInfo && (got[0].local != netip.MustParseAddr("127.0.0.1") || got[1].local != netip.IPv6Loopback()) {
		t.Fatalf("destinations %v, %v", got[0].local, got[1].local)
	}

	// Reply from the same socket to both, with the received destination as source.
	w, err := NewWriter(dc, WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	replies := []Message{
		{Buf: []byte("to v4"), Addr: got[0].from, Local: got[0].local},
		{Buf: []byte("to v6"), Addr: got[1].from, Local: got[1].local},
	}
	if n, err := w.WriteBatch(replies); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	for _, c := range []struct {
		peer interface {
			SetReadDeadline(time.Time) error
			ReadFromUDPAddrPort([]byte) (int, netip.AddrPort, error)
		}
		want string
		from netip.AddrPort
	}{
		{v4, "to v4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)},
		{v6, "to v6", netip.AddrPortFrom(netip.IPv6Loopback(), port)},
	} {
		c.peer.SetReadDeadline(time.Now().Add(hangGuard))
		b := make([]byte, 100)
		n, from, err := c.peer.ReadFromUDPAddrPort(b)
		if err != nil {
			t.Fatalf("reply %q: %v", c.want, err)
		}
		if string(b[:n]) != c.want || from.Addr().Unmap() != c.from.Addr() || from.Port() != port {
			t.Fatalf("got %q from %v, want %q from %v", b[:n], from, c.want, c.from)
		}
	}
}
