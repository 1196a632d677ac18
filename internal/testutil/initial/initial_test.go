package initial

import (
	"bytes"
	"crypto/tls"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
)

// TestBuildOpensAsServer: a server holding the Initial keys of the DCID
// opens what Build made, finds the header fields, the packet number and
// the frames, and the padding brings the datagram to Size.
func TestBuildOpensAsServer(t *testing.T) {
	dcid, scid, tok := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}, []byte("token")
	tp := wire.DefaultTransportParameters()
	tp.InitialSourceConnectionID, tp.HasInitialSourceConnectionID = scid, true
	hello := ClientHello(t, &tls.Config{ServerName: "localhost", NextProtos: []string{"h3"}}, &tp)
	payload := wire.AppendCryptoFrame(nil, 0, hello)
	for _, v := range []wire.Version{0, wire.Version2} {
		pkt := Build(t, Packet{Version: v, DCID: dcid, SCID: scid, Token: tok, PN: 7, PNLen: 2, Payload: payload, Size: 1200})
		if len(pkt) != 1200 {
			t.Fatalf("version %v: %d bytes", v, len(pkt))
		}
		var h wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &h); err != nil {
			t.Fatal(err)
		}
		want := v
		if want == 0 {
			want = wire.Version1
		}
		if h.Type != wire.PacketTypeInitial || h.Version != want || !bytes.Equal(h.SrcConnID, scid) || !bytes.Equal(h.Token, tok) || h.PacketLen != len(pkt) {
			t.Fatalf("header %+v", h)
		}
		_, opener, err := handshake.NewInitialKeys(dcid, want, false)
		if err != nil {
			t.Fatal(err)
		}
		plain, pn, err := opener.UnprotectPacket(pkt, h.PNOffset, -1)
		if err != nil || pn != 7 || !bytes.HasPrefix(plain, payload) {
			t.Fatalf("opened: pn %d, %v", pn, err)
		}
	}
}
