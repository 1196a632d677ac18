// Package initial is for tests only: it builds the client Initial packets
// that tests send to a server or an offload path (RFC 9000 section 17.2.2),
// protected with the Initial keys of their destination connection ID as a
// client would protect them, and the ClientHello a real client puts in one.
package initial

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// Packet is a client Initial to build.
type Packet struct {
	// Version is the QUIC version; zero means version 1.
	Version wire.Version
	// DCID (whose Initial keys protect the packet), SCID and Token go
	// into the long header.
	DCID, SCID, Token []byte
	// PN is the packet number, written in PNLen bytes (zero means 4).
	PN    uint64
	PNLen int
	// Payload is the frames, before the PADDING frames.
	Payload []byte
	// Size pads the protected packet to this many bytes, when its content
	// leaves room: 1200 is the smallest datagram a server accepts an
	// Initial in.
	Size int
}

// Build returns p protected with the client Initial keys of p.DCID.
func Build(tb testing.TB, p Packet) []byte {
	tb.Helper()
	v := p.Version
	if v == 0 {
		v = wire.Version1
	}
	pnLen := p.PNLen
	if pnLen == 0 {
		pnLen = 4
	}
	sealer, _, err := handshake.NewInitialKeys(p.DCID, v, true)
	if err != nil {
		tb.Fatal(err)
	}
	const lengthLen = 2
	h := wire.LongHeader{Type: wire.PacketTypeInitial, Version: v, DestConnID: p.DCID, SrcConnID: p.SCID, Token: p.Token}
	b := wire.AppendLongHeader(make([]byte, 0, max(p.Size, 1200)+len(p.Payload)+128), &h, pnLen, lengthLen)
	lengthOff, pnOff := len(b)-lengthLen, len(b)
	b = wire.AppendPacketNumber(b, p.PN, pnLen)
	b = append(b, p.Payload...)
	if pad := p.Size - sealer.Overhead() - len(b); pad > 0 {
		b = append(b, make([]byte, pad)...) // PADDING frames
	}
	wire.PutVarintWithLen(b[lengthOff:], uint64(len(b)-pnOff+sealer.Overhead()), lengthLen)
	b, err = sealer.ProtectPacket(b, pnOff, pnLen, p.PN)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ClientHello returns the ClientHello crypto/tls's QUIC client writes at
// the Initial level with conf and the transport parameters tp. It forces
// TLS 1.3 and X25519 alone on a copy of conf: the hybrid post-quantum key
// share would not fit one Initial.
func ClientHello(tb testing.TB, conf *tls.Config, tp *wire.TransportParameters) []byte {
	tb.Helper()
	params, err := tp.Marshal(nil, protocol.PerspectiveClient)
	if err != nil {
		tb.Fatal(err)
	}
	conf = conf.Clone()
	conf.MinVersion = tls.VersionTLS13
	conf.CurvePreferences = []tls.CurveID{tls.X25519}
	qc := tls.QUICClient(&tls.QUICConfig{TLSConfig: conf})
	defer qc.Close()
	qc.SetTransportParameters(params)
	if err := qc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	var hello []byte
	for ev := qc.NextEvent(); ev.Kind != tls.QUICNoEvent; ev = qc.NextEvent() {
		if ev.Kind == tls.QUICWriteData && ev.Level == tls.QUICEncryptionLevelInitial {
			hello = append(hello, ev.Data...)
		}
	}
	if len(hello) == 0 {
		tb.Fatal("crypto/tls wrote no ClientHello")
	}
	return hello
}
