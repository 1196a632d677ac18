package flood

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/internal/wire"
)

func TestInitialDecryptsWithServerKeys(t *testing.T) {
	for _, v := range []Version{Version1, Version2} {
		for _, dl := range []int{8, 13, 20} {
			g, err := NewGenerator(GeneratorConfig{Version: v, DCIDLen: dl, PoolSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				pkt, err := g.Next(nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(pkt) != UDPPayloadSize {
					t.Fatalf("%v: packet is %d bytes, want %d", v, len(pkt), UDPPayloadSize)
				}
				orig := append([]byte(nil), pkt...)
				got, err := OpenInitial(pkt)
				if err != nil {
					t.Fatalf("%v dcid %d: %v", v, dl, err)
				}
				if !bytes.Equal(pkt, orig) {
					t.Fatal("OpenInitial modified its input")
				}
				if got.Version != v || len(got.DCID) != dl || len(got.SCID) != DefaultSCIDLen || got.PacketNumber != 0 {
					t.Fatalf("opened %+v", got)
				}
				if !IsClientHello(got.Crypto) {
					t.Fatalf("CRYPTO data is not one ClientHello: % x", got.Crypto[:8])
				}
				if got.Padding == 0 {
					t.Fatal("no padding")
				}
			}
		}
	}
}

// TestInitialTypeBits checks the long header type bits on the wire: RFC
// 9369 moves Initial from 0b00 (v1) to 0b01 (v2). Header protection only
// masks the low four bits, so these stay readable.
func TestInitialTypeBits(t *testing.T) {
	for _, c := range []struct {
		v    Version
		bits byte
	}{{Version1, 0}, {Version2, 1}} {
		pkt, err := AppendInitial(nil, c.v, bytes.Repeat([]byte{1}, 8), []byte{2}, []byte{1, 0, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		if pkt[0]&0xc0 != 0xc0 || (pkt[0]>>4)&3 != c.bits {
			t.Fatalf("%v: first byte %#x, want long header with type bits %d", c.v, pkt[0], c.bits)
		}
		var h wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &h); err != nil || h.Type != wire.PacketTypeInitial || h.Version != wire.Version(c.v) {
			t.Fatalf("%v: parsed %v %v %v", c.v, h.Type, h.Version, err)
		}
	}
}

// TestInitialTamperFails proves the opener really authenticates: a changed
// DCID (the keys change) or payload byte must fail.
func TestInitialTamperFails(t *testing.T) {
	g, err := NewGenerator(GeneratorConfig{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	pkt, _ := g.Next(nil)
	for _, off := range []int{6, 100, UDPPayloadSize - 1} {
		bad := append([]byte(nil), pkt...)
		bad[off] ^= 0x40
		if _, err := OpenInitial(bad); !errors.Is(err, ErrNotInitial) {
			t.Errorf("byte %d flipped: err %v, want ErrNotInitial", off, err)
		}
	}
}

func TestAppendInitialRejects(t *testing.T) {
	dcid := make([]byte, 8)
	for _, c := range []struct {
		name              string
		v                 Version
		dcid, scid, hello []byte
		want              error
	}{
		{"version", 7, dcid, nil, []byte{1}, ErrVersion},
		{"short dcid", Version1, dcid[:7], nil, []byte{1}, ErrConnIDLength},
		{"long dcid", Version1, make([]byte, 21), nil, []byte{1}, ErrConnIDLength},
		{"long scid", Version1, dcid, make([]byte, 21), []byte{1}, ErrConnIDLength},
		{"empty hello", Version1, dcid, nil, nil, ErrHelloTooLarge},
		{"big hello", Version1, dcid, nil, make([]byte, 1200), ErrHelloTooLarge},
	} {
		if _, err := AppendInitial(nil, c.v, c.dcid, c.scid, c.hello); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	// The largest hello that fits must work and fill the packet exactly.
	room := UDPPayloadSize - initialHeaderLen(8, 0) - pnLen - tagLen - 4
	pkt, err := AppendInitial(nil, Version1, dcid, nil, make([]byte, room))
	if err != nil || len(pkt) != UDPPayloadSize {
		t.Fatalf("hello of %d bytes: %d bytes, %v", room, len(pkt), err)
	}
	if o, err := OpenInitial(pkt); err != nil || len(o.Crypto) != room || o.Padding != 0 {
		t.Fatalf("full packet: %v", err)
	}
}

func TestGeneratorConfigErrors(t *testing.T) {
	for _, c := range []GeneratorConfig{
		{Version: 3},
		{DCIDLen: 7},
		{DCIDLen: 21},
		{SCIDLen: 21},
		{SCIDLen: -1},
		{PoolSize: -1},
		{PoolSize: MaxPoolSize + 1},
	} {
		if _, err := NewGenerator(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestPoolDistinctAndCycled(t *testing.T) {
	g, err := NewGenerator(GeneratorConfig{PoolSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	dcids := map[string]bool{}
	var first []byte
	for i := range 17 {
		pkt, _ := g.Next(nil)
		o, err := OpenInitial(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = pkt
		}
		if i == 16 {
			if !bytes.Equal(pkt, first) {
				t.Fatal("pool did not cycle back to its first packet")
			}
			break
		}
		if dcids[string(o.DCID)] {
			t.Fatalf("DCID repeated within the pool at %d", i)
		}
		dcids[string(o.DCID)] = true
	}
}

func TestReprotectFreshIDs(t *testing.T) {
	g, err := NewGenerator(GeneratorConfig{Reprotect: true, DCIDLen: 20, SCIDLen: 20, Version: Version2})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	buf := make([]byte, 0, UDPPayloadSize)
	for range 50 {
		pkt, err := g.Next(buf)
		if err != nil {
			t.Fatal(err)
		}
		o, err := OpenInitial(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(o.DCID)] || seen[string(o.SCID)] {
			t.Fatal("connection ID repeated")
		}
		seen[string(o.DCID)], seen[string(o.SCID)] = true, true
	}
}

func TestSeedReproducible(t *testing.T) {
	seed := &[32]byte{1, 2, 3}
	ids := func() []byte {
		g, err := NewGenerator(GeneratorConfig{Reprotect: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		pkt, _ := g.Next(nil)
		o, err := OpenInitial(pkt)
		if err != nil {
			t.Fatal(err)
		}
		return append(o.DCID, o.SCID...)
	}
	if a, b := ids(), ids(); !bytes.Equal(a, b) {
		t.Fatalf("same seed, different IDs: %x %x", a, b)
	}
}

// TestClientHelloAcceptedByTLSServer feeds a generated Initial's CRYPTO
// data to crypto/tls's QUIC server, which must accept it as a ClientHello
// and answer with a ServerHello at the Initial level.
func TestClientHelloAcceptedByTLSServer(t *testing.T) {
	g, err := NewGenerator(GeneratorConfig{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	pkt, _ := g.Next(nil)
	o, err := OpenInitial(pkt)
	if err != nil {
		t.Fatal(err)
	}
	srv := tls.QUICServer(&tls.QUICConfig{TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{testcert.New(t, DefaultServerName)},
		NextProtos:   []string{"h3"},
		MinVersion:   tls.VersionTLS13,
	}})
	defer srv.Close()
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleData(tls.QUICEncryptionLevelInitial, o.Crypto); err != nil {
		t.Fatalf("TLS server rejected the ClientHello: %v", err)
	}
	var sawParams, sawServerHello bool
	for range 100 {
		ev := srv.NextEvent()
		switch ev.Kind {
		case tls.QUICNoEvent:
			if !sawParams || !sawServerHello {
				t.Fatalf("transport parameters %v, ServerHello %v", sawParams, sawServerHello)
			}
			return
		case tls.QUICTransportParametersRequired:
			srv.SetTransportParameters(nil)
		case tls.QUICTransportParameters:
			var tp wire.TransportParameters
			if err := tp.Unmarshal(ev.Data, protocol.PerspectiveClient); err != nil {
				t.Fatalf("client transport parameters: %v", err)
			}
			if !bytes.Equal(tp.InitialSourceConnectionID, o.SCID) {
				t.Fatalf("initial_source_connection_id %x, header SCID %x", tp.InitialSourceConnectionID, o.SCID)
			}
			sawParams = true
		case tls.QUICWriteData:
			if ev.Level == tls.QUICEncryptionLevelInitial && len(ev.Data) > 0 && ev.Data[0] == 0x02 {
				sawServerHello = true
			}
		}
	}
	t.Fatal("TLS server kept producing events")
}
