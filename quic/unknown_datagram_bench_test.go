package quic

import (
	"net"
	"testing"
	"time"
)

// BenchmarkUnknownDatagramUDPConn measures the stateless answers on a
// real socket, as the batched read loop hands them over: the sender as a
// netip.AddrPort only. Each op is one handleDatagram and one sendto on
// loopback (the client does not read; the kernel drops what overflows).
func BenchmarkUnknownDatagramUDPConn(b *testing.B) {
	serverConn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	key := StatelessResetKey{1}
	tr := &Transport{Conn: serverConn, StatelessResetKey: &key, ConnectionIDLength: 8,
		AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
	defer tr.Close()
	if _, err := tr.Listen(serverTLS(b), nil); err != nil {
		b.Fatal(err)
	}
	from := client.LocalAddr().(*net.UDPAddr).AddrPort()
	dcid, scid := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	shortHeader := make([]byte, 100)
	shortHeader[0] = 0x40
	for _, c := range []struct {
		name string
		pkt  []byte
	}{
		{"Retry", buildClientInitial(b, dcid, scid, nil, minInitialSize)},
		{"VersionNegotiation", rawLongHeader(0x1a2a3a4a, dcid, scid, minInitialSize)},
		{"StatelessReset", shortHeader},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tr.handleDatagram(receivedPacket{data: c.pkt, addrPort: from, rcvTime: time.Now()})
			}
		})
	}
}
