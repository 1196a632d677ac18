package wire

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

func FuzzParseHeader(f *testing.F) {
	for _, h := range rfcInitialHeaders {
		f.Add(append(mustHex(f, h.hdr), make([]byte, h.length)...), uint8(0))
	}
	f.Add(mustHex(f, "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba"), uint8(0))
	f.Add(AppendVersionNegotiation(nil, []byte{1, 2, 3}, []byte{4}, []Version{Version1, Version2}), uint8(0))
	f.Add(append(AppendShortHeader(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 2, true, false), 0, 1, 2, 3), uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, cidLen uint8) {
		if len(data) == 0 {
			return
		}
		_, _ = ParseDestConnID(data, int(cidLen%21))
		if !IsLongHeader(data[0]) {
			fuzzShortHeader(t, data, int(cidLen%21))
			return
		}
		var inv InvariantHeader
		if err := ParseInvariantHeader(data, &inv); err != nil {
			return
		}
		if inv.Version == 0 {
			fuzzVersionNegotiation(t, data)
			return
		}
		var h LongHeader
		if err := ParseLongHeader(data, &h); err != nil {
			return
		}
		if !bytes.Equal(h.DestConnID, inv.DestConnID) || !bytes.Equal(h.SrcConnID, inv.SrcConnID) || h.Version != inv.Version {
			t.Fatalf("long header and invariants disagree: %+v %+v", h, inv)
		}
		var re []byte
		if h.Type == PacketTypeRetry {
			re = AppendLongHeader(nil, &h, 0, 0)
			re = append(re, h.RetryIntegrityTag...)
		} else {
			re = AppendLongHeader(nil, &h, PacketNumberLenFromFirstByte(data[0]), 0)
			re = append(re, data[h.PNOffset:h.PacketLen]...)
		}
		var h2 LongHeader
		if err := ParseLongHeader(re, &h2); err != nil {
			t.Fatalf("re-encoded header does not parse: %v\n%x", err, re)
		}
		if h2.Type != h.Type || h2.Version != h.Version || !bytes.Equal(h2.DestConnID, h.DestConnID) ||
			!bytes.Equal(h2.SrcConnID, h.SrcConnID) || !bytes.Equal(h2.Token, h.Token) || h2.Length != h.Length ||
			!bytes.Equal(h2.RetryIntegrityTag, h.RetryIntegrityTag) || h2.PacketLen-h2.PNOffset != h.PacketLen-h.PNOffset {
			t.Fatalf("re-encoded header differs:\n%+v\n%+v", h, h2)
		}
	})
}

func fuzzShortHeader(t *testing.T, data []byte, cidLen int) {
	var h ShortHeader
	if err := ParseShortHeader(data, cidLen, &h); err != nil {
		return
	}
	re := AppendShortHeader(nil, h.DestConnID, PacketNumberLenFromFirstByte(data[0]), data[0]&0x04 != 0, data[0]&0x20 != 0)
	re = append(re, data[h.PNOffset:]...)
	var h2 ShortHeader
	if err := ParseShortHeader(re, cidLen, &h2); err != nil || !bytes.Equal(h2.DestConnID, h.DestConnID) || h2.PNOffset != h.PNOffset {
		t.Fatalf("short header re-encoding: %+v %+v %v", h, h2, err)
	}
}

func fuzzVersionNegotiation(t *testing.T, data []byte) {
	dcid, scid, vs, err := ParseVersionNegotiation(data, nil)
	if err != nil {
		return
	}
	// Building swaps the IDs, so pass them swapped to get the same packet.
	re := AppendVersionNegotiation(nil, scid, dcid, vs)
	d2, s2, vs2, err := ParseVersionNegotiation(re, nil)
	if err != nil || !bytes.Equal(d2, dcid) || !bytes.Equal(s2, scid) || !reflect.DeepEqual(vs, vs2) {
		t.Fatalf("version negotiation re-encoding: %v", err)
	}
}

func FuzzParseFrames(f *testing.F) {
	var all []byte
	for i := range testFrames {
		b := AppendFrame(nil, &testFrames[i])
		f.Add(b)
		if fr := testFrames[i]; fr.Type != FrameTypePadding && !((fr.Type == FrameTypeStream || fr.Type == FrameTypeDatagram) && !fr.HasLength) {
			all = append(all, b...)
		}
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr, again Frame
		for len(data) > 0 {
			n, err := ParseFrame(data, &fr)
			if err != nil {
				return
			}
			if n <= 0 || n > len(data) {
				t.Fatalf("ParseFrame consumed %d of %d bytes", n, len(data))
			}
			b := AppendFrame(nil, &fr)
			if FrameLen(&fr) != len(b) {
				t.Fatalf("%s: FrameLen %d, encoded %d", fr.Type, FrameLen(&fr), len(b))
			}
			m, err := ParseFrame(b, &again)
			if err != nil || m != len(b) || !frameEqual(&fr, &again) {
				t.Fatalf("%s did not round-trip: %v\n%+v\n%+v", fr.Type, err, fr, again)
			}
			data = data[n:]
		}
	})
}

func FuzzTransportParameters(f *testing.F) {
	server := fullServerParams()
	b, _ := server.Marshal(nil, protocol.PerspectiveServer)
	f.Add(b, true)
	client := DefaultTransportParameters()
	client.InitialMaxData = 1 << 20
	client.InitialSourceConnectionID, client.HasInitialSourceConnectionID = []byte{1, 2, 3, 4}, true
	b, _ = client.Marshal(nil, protocol.PerspectiveClient)
	f.Add(b, false)
	f.Add(tpRaw(31*3+27, []byte("grease")), false)
	f.Fuzz(func(t *testing.T, data []byte, fromServer bool) {
		role := protocol.PerspectiveClient
		if fromServer {
			role = protocol.PerspectiveServer
		}
		var p TransportParameters
		if err := p.Unmarshal(data, role); err != nil {
			return
		}
		b, err := p.Marshal(nil, role)
		if err != nil {
			t.Fatalf("accepted parameters do not marshal: %v\n%+v", err, p)
		}
		var q TransportParameters
		if err := q.Unmarshal(b, role); err != nil {
			t.Fatalf("marshalled parameters do not unmarshal: %v", err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip differs:\n%+v\n%+v", p, q)
		}
	})
}
