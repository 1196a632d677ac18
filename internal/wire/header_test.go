package wire

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"testing"
)

// Unprotected Initial headers from RFC 9001 appendix A.2/A.3 and RFC 9369
// appendix A.2/A.3, up to and including the packet number.
var rfcInitialHeaders = []struct {
	name        string
	hdr         string
	v           Version
	dcid, scid  string
	length      uint64
	pn          uint64
	pnLen       int
	lengthBytes int
}{
	{"v1 client", "c300000001088394c8f03e5157080000449e00000002", Version1, "8394c8f03e515708", "", 1182, 2, 4, 2},
	{"v1 server", "c1000000010008f067a5502a4262b50040750001", Version1, "", "f067a5502a4262b5", 117, 1, 2, 2},
	{"v2 client", "d36b3343cf088394c8f03e5157080000449e00000002", Version2, "8394c8f03e515708", "", 1182, 2, 4, 2},
	{"v2 server", "d16b3343cf0008f067a5502a4262b50040750001", Version2, "", "f067a5502a4262b5", 117, 1, 2, 2},
}

func TestLongHeaderRFCInitials(t *testing.T) {
	for _, tt := range rfcInitialHeaders {
		t.Run(tt.name, func(t *testing.T) {
			want := mustHex(t, tt.hdr)
			h := LongHeader{Type: PacketTypeInitial, Version: tt.v, DestConnID: mustHex(t, tt.dcid),
				SrcConnID: mustHex(t, tt.scid), Length: tt.length}
			b := AppendLongHeader(nil, &h, tt.pnLen, tt.lengthBytes)
			b = AppendPacketNumber(b, tt.pn, tt.pnLen)
			if !bytes.Equal(b, want) {
				t.Fatalf("built %x\nwant  %x", b, want)
			}
			// Parse it back, with the rest of the packet present.
			pkt := append(want, make([]byte, int(tt.length)-tt.pnLen)...)
			var p LongHeader
			if err := ParseLongHeader(pkt, &p); err != nil {
				t.Fatal(err)
			}
			if p.Type != PacketTypeInitial || p.Version != tt.v || !bytes.Equal(p.DestConnID, h.DestConnID) ||
				!bytes.Equal(p.SrcConnID, h.SrcConnID) || p.Token != nil || p.Length != tt.length {
				t.Errorf("parsed %+v", p)
			}
			if p.PNOffset != len(want)-tt.pnLen || p.PacketLen != len(pkt) {
				t.Errorf("PNOffset %d PacketLen %d, want %d %d", p.PNOffset, p.PacketLen, len(want)-tt.pnLen, len(pkt))
			}
			if PacketNumberLenFromFirstByte(pkt[0]) != tt.pnLen {
				t.Errorf("pn length bits wrong")
			}
			if pn, err := ReadPacketNumber(pkt[p.PNOffset:], tt.pnLen); err != nil || pn != tt.pn {
				t.Errorf("ReadPacketNumber = %d, %v", pn, err)
			}
		})
	}
}

// RFC 9369 section 3.2: long header type bits differ between v1 and v2.
func TestLongHeaderTypeBits(t *testing.T) {
	want := map[Version]map[PacketType]byte{
		Version1: {PacketTypeInitial: 0, PacketType0RTT: 1, PacketTypeHandshake: 2, PacketTypeRetry: 3},
		Version2: {PacketTypeInitial: 1, PacketType0RTT: 2, PacketTypeHandshake: 3, PacketTypeRetry: 0},
	}
	for v, m := range want {
		for pt, bits := range m {
			h := LongHeader{Type: pt, Version: v, DestConnID: []byte{1, 2, 3, 4}, SrcConnID: []byte{5},
				Token: []byte("tok"), Length: 5}
			b := AppendLongHeader(nil, &h, 1, 0)
			if got := (b[0] >> 4) & 3; got != bits {
				t.Errorf("%s %s: type bits %02b, want %02b", v, pt, got, bits)
			}
			if pt == PacketTypeRetry {
				b = append(b, make([]byte, RetryIntegrityTagLen)...)
			} else {
				b = append(b, make([]byte, 5)...)
			}
			var p LongHeader
			if err := ParseLongHeader(b, &p); err != nil || p.Type != pt || p.Version != v {
				t.Errorf("%s %s: parsed %s %s, %v", v, pt, p.Version, p.Type, err)
			}
		}
	}
}

func TestLongHeaderRoundTrip(t *testing.T) {
	for _, v := range []Version{Version1, Version2} {
		for _, pt := range []PacketType{PacketTypeInitial, PacketType0RTT, PacketTypeHandshake} {
			h := LongHeader{Type: pt, Version: v, DestConnID: bytes.Repeat([]byte{0xd}, 20),
				SrcConnID: []byte{1, 2, 3}, Length: 300}
			if pt == PacketTypeInitial {
				h.Token = []byte("an address validation token")
			}
			b := AppendLongHeader(nil, &h, 3, 4)
			pnOff := len(b)
			b = AppendPacketNumber(b, 0x123456, 3)
			b = append(b, make([]byte, 297)...)
			b = append(b, 0x40, 0xff) // a coalesced packet would follow
			var p LongHeader
			if err := ParseLongHeader(b, &p); err != nil {
				t.Fatalf("%s %s: %v", v, pt, err)
			}
			if p.Type != pt || !bytes.Equal(p.DestConnID, h.DestConnID) || !bytes.Equal(p.SrcConnID, h.SrcConnID) ||
				!bytes.Equal(p.Token, h.Token) || p.Length != 300 || p.PNOffset != pnOff || p.PacketLen != pnOff+300 {
				t.Errorf("%s %s: parsed %+v", v, pt, p)
			}
			if pt != PacketTypeInitial && p.Token != nil {
				t.Errorf("%s: token set", pt)
			}
		}
	}
}

func TestLongHeaderErrors(t *testing.T) {
	valid := func() []byte {
		h := LongHeader{Type: PacketTypeHandshake, Version: Version1, DestConnID: []byte{1, 2}, SrcConnID: []byte{3}, Length: 2}
		return append(AppendLongHeader(nil, &h, 1, 0), 0, 0)
	}
	tests := []struct {
		name   string
		mangle func([]byte) []byte
		want   error
	}{
		{"short header", func(b []byte) []byte { b[0] &^= 0x80; return b }, ErrNotLongHeader},
		{"fixed bit", func(b []byte) []byte { b[0] &^= 0x40; return b }, ErrFixedBitZero},
		{"unknown version", func(b []byte) []byte { b[4] = 9; return b }, ErrUnsupportedVersion},
		{"version negotiation", func(b []byte) []byte { b[4] = 0; return b }, ErrUnsupportedVersion},
		{"length beyond packet", func(b []byte) []byte { return b[:len(b)-1] }, ErrLengthBeyondPacket},
		{"truncated in DCID", func(b []byte) []byte { return b[:7] }, ErrPacketTruncated},
		{"truncated before length", func(b []byte) []byte { return b[:10] }, ErrPacketTruncated},
		{"empty", func(b []byte) []byte { return nil }, ErrPacketTruncated},
		{"DCID 21 bytes", func(b []byte) []byte {
			return append(append(append([]byte{}, b[:5]...), 21), make([]byte, 30)...)
		}, ErrConnIDTooLong},
	}
	for _, tt := range tests {
		var h LongHeader
		if err := ParseLongHeader(tt.mangle(valid()), &h); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// RFC 9001 appendix A.4 and RFC 9369 appendix A.4 Retry packets: the tag
// computed over AppendRetryPseudoPacket must match the tag in the packet,
// which proves the pseudo-packet layout.
func TestRetryRFCVectors(t *testing.T) {
	tests := []struct {
		name, pkt, key, nonce string
		v                     Version
	}{
		{"v1", "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba",
			"be0c690b9f66575a1d766b54e368c84e", "461599d35d632bf2239825bb", Version1},
		{"v2", "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6",
			"8fb4b01b56ac48e260fbcbcead7ccc92", "d86969bc2d7c6d9990efb04a", Version2},
	}
	odcid := mustHex(t, "8394c8f03e515708")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := mustHex(t, tt.pkt)
			var h LongHeader
			if err := ParseLongHeader(pkt, &h); err != nil {
				t.Fatal(err)
			}
			if h.Type != PacketTypeRetry || h.Version != tt.v || len(h.DestConnID) != 0 ||
				!bytes.Equal(h.SrcConnID, mustHex(t, "f067a5502a4262b5")) || string(h.Token) != "token" ||
				!bytes.Equal(h.RetryIntegrityTag, pkt[len(pkt)-16:]) || h.PacketLen != len(pkt) {
				t.Fatalf("parsed %+v", h)
			}
			// Rebuild: the RFC packets have the unused bits set to 1.
			built := AppendRetry(nil, tt.v, h.DestConnID, h.SrcConnID, h.Token)
			built[0] |= 0x0f
			if !bytes.Equal(built, pkt[:len(pkt)-16]) {
				t.Errorf("AppendRetry = %x", built)
			}
			block, _ := aes.NewCipher(mustHex(t, tt.key))
			aead, _ := cipher.NewGCM(block)
			pseudo := AppendRetryPseudoPacket(nil, odcid, pkt[:len(pkt)-RetryIntegrityTagLen])
			tag := aead.Seal(nil, mustHex(t, tt.nonce), nil, pseudo)
			if !bytes.Equal(tag, h.RetryIntegrityTag) {
				t.Errorf("tag over pseudo-packet %x, want %x", tag, h.RetryIntegrityTag)
			}
		})
	}
}

func TestRetryErrors(t *testing.T) {
	base := AppendRetry(nil, Version1, []byte{1}, []byte{2}, nil)
	var h LongHeader
	if err := ParseLongHeader(append(base, make([]byte, 15)...), &h); err != ErrPacketTruncated {
		t.Errorf("short tag: %v", err)
	}
	if err := ParseLongHeader(append(base, make([]byte, 16)...), &h); err != ErrEmptyRetryToken {
		t.Errorf("empty token: %v", err)
	}
}

func TestShortHeader(t *testing.T) {
	dcid := []byte{9, 8, 7, 6, 5, 4, 3, 2}
	b := AppendShortHeader(nil, dcid, 2, true, true)
	b = AppendPacketNumber(b, 0xabcd, 2)
	b = append(b, 0xee)
	if b[0] != 0x40|0x20|0x04|0x01 {
		t.Errorf("first byte %08b", b[0])
	}
	var h ShortHeader
	if err := ParseShortHeader(b, len(dcid), &h); err != nil || !bytes.Equal(h.DestConnID, dcid) || h.PNOffset != 9 {
		t.Fatalf("parsed %+v, %v", h, err)
	}
	for name, c := range map[string]struct {
		b      []byte
		cidLen int
		want   error
	}{
		"truncated":   {b[:5], 8, ErrPacketTruncated},
		"empty":       {nil, 8, ErrPacketTruncated},
		"long header": {[]byte{0xc0, 1, 2}, 0, ErrNotShortHeader},
		"fixed bit":   {[]byte{0x00, 1, 2}, 0, ErrFixedBitZero},
		"cid length":  {b, 21, ErrConnIDTooLong},
		"negative":    {b, -1, ErrConnIDTooLong},
	} {
		if err := ParseShortHeader(c.b, c.cidLen, &h); err != c.want {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}

func TestInvariantsAndDCID(t *testing.T) {
	// An unknown version with 255-byte connection IDs (RFC 8999 allows it).
	long := []byte{0x80, 0x12, 0x34, 0x56, 0x78, 255}
	long = append(long, bytes.Repeat([]byte{0xd}, 255)...)
	long = append(long, 255)
	long = append(long, bytes.Repeat([]byte{0x5}, 255)...)
	long = append(long, 0xaa, 0xbb)
	var h InvariantHeader
	if err := ParseInvariantHeader(long, &h); err != nil || h.Version != 0x12345678 ||
		len(h.DestConnID) != 255 || len(h.SrcConnID) != 255 || h.HeaderLen != len(long)-2 {
		t.Fatalf("invariants %v: %+v", err, h)
	}
	var lh LongHeader
	if err := ParseLongHeader(long, &lh); err != ErrUnsupportedVersion {
		t.Errorf("unknown version parsed as v1/v2: %v", err)
	}
	if err := ParseInvariantHeader(long[:100], &h); err != ErrPacketTruncated {
		t.Errorf("truncated: %v", err)
	}
	if d, err := ParseDestConnID(long, 8); err != nil || len(d) != 255 || d[0] != 0xd {
		t.Errorf("ParseDestConnID(long) = %x, %v", d, err)
	}
	short := AppendShortHeader(nil, []byte{1, 2, 3, 4}, 1, false, false)
	if d, err := ParseDestConnID(append(short, 0), 4); err != nil || !bytes.Equal(d, []byte{1, 2, 3, 4}) {
		t.Errorf("ParseDestConnID(short) = %x, %v", d, err)
	}
	if _, err := ParseDestConnID(short[:3], 4); err != ErrPacketTruncated {
		t.Errorf("truncated short: %v", err)
	}
	if _, err := ParseDestConnID(long[:20], 4); err != ErrPacketTruncated {
		t.Errorf("truncated long: %v", err)
	}
}

func TestVersionNegotiation(t *testing.T) {
	clientDCID, clientSCID := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9}
	vs := []Version{Version2, Version1, 0x3a4a5a6a}
	seen := map[byte]bool{}
	for range 64 {
		b := AppendVersionNegotiation(nil, clientDCID, clientSCID, vs)
		if b[0]&0xc0 != 0xc0 {
			t.Fatalf("first byte %08b lacks form/fixed bits", b[0])
		}
		seen[b[0]] = true
		dcid, scid, got, err := ParseVersionNegotiation(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		// RFC 9000 section 17.2.1: the connection IDs are swapped.
		if !bytes.Equal(dcid, clientSCID) || !bytes.Equal(scid, clientDCID) {
			t.Fatalf("CIDs not swapped: %x %x", dcid, scid)
		}
		if len(got) != 3 || got[0] != Version2 || got[1] != Version1 || got[2] != 0x3a4a5a6a {
			t.Fatalf("versions %v", got)
		}
	}
	if len(seen) < 2 {
		t.Error("unused first-byte bits never vary")
	}
	// The header alone takes the unused bits given, and nothing above
	// them.
	if h := AppendVersionNegotiationHeader([]byte{7}, 0xff, clientDCID, clientSCID); h[0] != 7 || h[1] != 0xff || len(h) != 1+7+len(clientDCID)+len(clientSCID) {
		t.Fatalf("header %x", h)
	}
	if h := AppendVersionNegotiationHeader(nil, 0x15, clientDCID, clientSCID); h[0] != 0xd5 {
		t.Fatalf("first byte %#x, want 0xd5", h[0])
	}
	b := AppendVersionNegotiation(nil, clientDCID, clientSCID, vs)
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty list":  {b[:len(b)-12], ErrBadVersionList},
		"partial":     {b[:len(b)-1], ErrBadVersionList},
		"not VN":      {append([]byte{0xc0, 0, 0, 0, 1}, b[5:]...), ErrNotVersionNegotiate},
		"short hdr":   {[]byte{0x40, 1, 2, 3, 4, 5, 6, 7}, ErrNotLongHeader},
		"truncated":   {b[:8], ErrPacketTruncated},
		"no versions": {b[:5], ErrPacketTruncated},
	} {
		if _, _, _, err := ParseVersionNegotiation(c.b, nil); err != c.want {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}
