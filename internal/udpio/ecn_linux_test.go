package udpio

import (
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

// TestSendECN: a datagram sent with an ECN codepoint (plain and as a GSO
// buffer) arrives with it, over IPv4, IPv6 and a dual-stack socket sending
// to an IPv4 peer.
func TestSendECN(t *testing.T) {
	for _, tc := range []struct {
		name, sendNet, sendAddr, recvNet, recvAddr string
	}{
		{"ipv4", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0"},
		{"ipv6", "udp6", "[::1]:0", "udp6", "[::1]:0"},
		{"dual-stack to ipv4", "udp", ":0", "udp4", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := listenUDP(t, tc.sendNet, tc.sendAddr)
			rc := listenUDP(t, tc.recvNet, tc.recvAddr)
			scaps := setupConn(t, sc, Config{DisableGRO: true})
			rcaps := setupConn(t, rc, Config{DisableGRO: true})
			if !rcaps.ECN {
				t.Skip("the receiving socket reports no ECN here")
			}
			w, r := writerReader(t, sc, WriterConfig{GSO: scaps.GSO}, rc, 16)
			to := addrPort(rc)
			if tc.sendNet == "udp" {
				to = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), to.Port())
			}
			msgs := []Message{
				{Buf: payload(0, 100), Addr: to, ECN: protocol.ECNECT0},
				{Buf: payload(1, 100), Addr: to, ECN: protocol.ECNCE},
				{Buf: payload(2, 100), Addr: to},
				{Buf: append(payload(3, 100), payload(4, 100)...), Addr: to, SegmentSize: 100, ECN: protocol.ECNECT1},
			}
			if n, err := w.WriteBatch(msgs); n != len(msgs) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			want := []protocol.ECN{protocol.ECNECT0, protocol.ECNCE, protocol.ECNNotECT, protocol.ECNECT1, protocol.ECNECT1}
			got := readDatagrams(t, rc, r, len(want), 1500)
			for i := range want {
				if got[i].ecn != want[i] {
					t.Errorf("datagram %d arrived with ECN %d, want %d", i, got[i].ecn, want[i])
				}
			}
		})
	}
}
