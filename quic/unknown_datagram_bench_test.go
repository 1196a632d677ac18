package quic

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// unknownDatagram is a datagram of an unknown connection and what the
// listener answers it with.
type unknownDatagram struct {
	name     string
	pkt      []byte
	from     netip.AddrPort
	isAnswer func([]byte) bool
}

// answer hands d to tr as the batched read loop does: the sender as a
// netip.AddrPort only, and a nil buf, which keeps the datagram (read in
// place on these paths) out of the buffer pool.
func (d *unknownDatagram) answer(tr *Transport) {
	tr.handleDatagram(receivedPacket{data: d.pkt, addrPort: d.from, rcvTime: time.Now()})
}

// unknownDatagramServer starts a listener (AlwaysRetry, a stateless reset
// key) on a loopback *net.UDPConn and returns it with a client socket,
// closed when the test ends, and the datagrams whose answers the client
// gets: a Retry, Version Negotiation and a stateless reset.
func unknownDatagramServer(tb testing.TB) (*Transport, *net.UDPConn, []unknownDatagram) {
	tb.Helper()
	serverConn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	key := StatelessResetKey{1}
	tr := &Transport{Conn: serverConn, StatelessResetKey: &key, ConnectionIDLength: 8,
		AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
	tb.Cleanup(func() { tr.Close() })
	if _, err := tr.Listen(serverTLS(tb), nil); err != nil {
		tb.Fatal(err)
	}
	from := client.LocalAddr().(*net.UDPAddr).AddrPort()
	dcid, scid := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	shortHeader := make([]byte, 100)
	shortHeader[0] = 0x40
	version := func(b []byte) uint32 { return binary.BigEndian.Uint32(b[1:5]) }
	return tr, client, []unknownDatagram{
		{"Retry", buildClientInitial(tb, dcid, scid, nil, minInitialSize), from, func(b []byte) bool {
			var h wire.LongHeader
			return len(b) > 5 && version(b) != 0 && wire.ParseLongHeader(b, &h) == nil && h.Type == wire.PacketTypeRetry
		}},
		{"VersionNegotiation", rawLongHeader(0x1a2a3a4a, dcid, scid, minInitialSize), from, func(b []byte) bool {
			return len(b) > 5 && wire.IsLongHeader(b[0]) && version(b) == 0
		}},
		{"StatelessReset", shortHeader, from, func(b []byte) bool {
			return len(b) > 0 && !wire.IsLongHeader(b[0])
		}},
	}
}

// BenchmarkUnknownDatagramUDPConn measures the stateless answers on a
// real socket, as the batched read loop hands them over. Each op is one
// handleDatagram and one sendto on loopback (the client does not read;
// the kernel drops what overflows).
func BenchmarkUnknownDatagramUDPConn(b *testing.B) {
	tr, _, cases := unknownDatagramServer(b)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.answer(tr)
			}
		})
	}
}
