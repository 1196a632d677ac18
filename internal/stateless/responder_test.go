package stateless

import (
	"bytes"
	"slices"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

func TestNew(t *testing.T) {
	cases := []struct {
		name string
		in   []wire.Version
		want []wire.Version
	}{
		{"default", nil, []wire.Version{wire.Version1, wire.Version2}},
		{"v2 preferred", []wire.Version{wire.Version2, wire.Version1}, []wire.Version{wire.Version2, wire.Version1}},
		{"v1 only", []wire.Version{wire.Version1}, []wire.Version{wire.Version1}},
		{"reserved left out", []wire.Version{0x1a2a3a4a, wire.Version2}, []wire.Version{wire.Version2}},
		{"duplicates", []wire.Version{wire.Version1, wire.Version1, wire.Version2, wire.Version1}, []wire.Version{wire.Version1, wire.Version2}},
	}
	for _, tc := range cases {
		r := mustNew(t, tc.in...)
		if got := r.Versions(nil); !slices.Equal(got, tc.want) {
			t.Errorf("%s: versions %v, want %v", tc.name, got, tc.want)
		}
		for _, v := range []wire.Version{wire.Version1, wire.Version2, 0x1a2a3a4a, 0} {
			if r.Supports(v) != slices.Contains(tc.want, v) {
				t.Errorf("%s: Supports(%v) = %v", tc.name, v, r.Supports(v))
			}
		}
	}
	for _, bad := range [][]wire.Version{{0xff00001d}, {0x1a2a3a4a}, {wire.Version1, 0x12345678}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%v) accepted", bad)
		}
	}
}

func TestExamine(t *testing.T) {
	r := mustNew(t, wire.Version1, wire.Version2)
	v1only := mustNew(t, wire.Version1)
	initial := initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200)
	fixedBitZero := bytes.Clone(initial)
	fixedBitZero[0] &^= 0x40
	retry, err := r.AppendRetry(nil, examineInitial(t, r, initial), rfcSCID, []byte("token"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		r    *Responder
		pkt  []byte
		want Outcome
	}{
		{"empty", r, nil, Malformed},
		{"one byte", r, []byte{0xc0}, Malformed},
		{"truncated header", r, initial[:12], Malformed},
		{"Initial cut in the payload", r, initial[:len(initial)-1], Malformed},
		{"fixed bit zero", r, fixedBitZero, Malformed},
		{"short header", r, append([]byte{0x40}, make([]byte, 1300)...), ShortHeader},
		{"v1 DCID of 21 bytes", r, unknownVersionDatagram(1, make([]byte, 21), cscid, 1200), ConnIDTooLong},
		{"v2 SCID of 21 bytes", r, unknownVersionDatagram(uint32(wire.Version2), rfcODCID, make([]byte, 21), 1200), ConnIDTooLong},
		{"version 0", r, unknownVersionDatagram(0, rfcODCID, cscid, 1500), VersionNegotiationPacket},
		{"unknown version, 1199 bytes", r, unknownVersionDatagram(0x1a2a3a4a, rfcODCID, cscid, 1199), UnsupportedTooSmall},
		{"unknown version", r, unknownVersionDatagram(0x1a2a3a4a, rfcODCID, cscid, 1200), VersionNegotiation},
		{"v2 at a v1-only server", v1only, initialDatagram(t, wire.Version2, rfcODCID, cscid, nil, 1200), VersionNegotiation},
		{"v2 at a v1-only server, small", v1only, initialDatagram(t, wire.Version2, rfcODCID, cscid, nil, 1000), UnsupportedTooSmall},
		{"Retry", r, retry, UnexpectedRetry},
		{"0-RTT", r, longDatagram(t, wire.PacketType0RTT, wire.Version1, rfcODCID, cscid, nil, 1200), NotInitial},
		{"Handshake", r, longDatagram(t, wire.PacketTypeHandshake, wire.Version2, rfcODCID, cscid, nil, 1200), NotInitial},
		{"Initial, 1199 bytes", r, initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1199), InitialTooSmall},
		{"Initial with token, 1199 bytes", r, initialDatagram(t, wire.Version1, rfcODCID[:4], cscid, []byte("tok"), 1199), InitialTooSmall},
		{"DCID of 7 bytes", r, initialDatagram(t, wire.Version1, rfcODCID[:7], cscid, nil, 1200), DCIDTooShort},
		{"empty DCID", r, initialDatagram(t, wire.Version2, nil, cscid, nil, 1200), DCIDTooShort},
		{"DCID of 4 bytes with a token", r, initialDatagram(t, wire.Version1, rfcODCID[:4], cscid, []byte("tok"), 1200), Initial},
		{"v1 Initial", r, initial, Initial},
		{"v2 Initial", r, initialDatagram(t, wire.Version2, rfcODCID, cscid, nil, 1350), Initial},
		{"coalesced: Initial then garbage", r, append(initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200), 0xff, 0xff), Initial},
	}
	out := make([]byte, 0, MaxReplyLen)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := bytes.Clone(tc.pkt)
			var h wire.LongHeader
			o, reply := tc.r.Examine(tc.pkt, &h, out[:0])
			if o != tc.want {
				t.Fatalf("outcome %v, want %v", o, tc.want)
			}
			if (reply != nil) != (o == VersionNegotiation) {
				t.Fatalf("outcome %v with a %d-byte reply", o, len(reply))
			}
			if !bytes.Equal(tc.pkt, orig) {
				t.Fatal("Examine modified the datagram")
			}
			if o == Initial && (h.Type != wire.PacketTypeInitial || !bytes.Equal(h.SrcConnID, cscid)) {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

// TestVersionNegotiationList: the versions spoken in the server's order,
// then one reserved version that changes from packet to packet; the CIDs
// swapped (RFC 9000 section 17.2.1), up to 255 bytes each (RFC 8999).
func TestVersionNegotiationList(t *testing.T) {
	for _, ours := range [][]wire.Version{{wire.Version1, wire.Version2}, {wire.Version2, wire.Version1}, {wire.Version1}} {
		r := mustNew(t, ours...)
		dcid := bytes.Repeat([]byte{0xdd}, 40)
		scid := []byte{0x5c}
		pkt := unknownVersionDatagram(0x1a2a3a4a, dcid, scid, 1200)
		greases := map[wire.Version]bool{}
		for range 16 {
			var h wire.LongHeader
			o, reply := r.Examine(pkt, &h, nil)
			if o != VersionNegotiation {
				t.Fatalf("%v: outcome %v", ours, o)
			}
			gotD, gotS, vs, err := wire.ParseVersionNegotiation(reply, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotD, scid) || !bytes.Equal(gotS, dcid) {
				t.Fatalf("VN CIDs %x / %x", gotD, gotS)
			}
			if len(vs) != len(ours)+1 || !slices.Equal(vs[:len(ours)], ours) || !vs[len(ours)].IsReserved() {
				t.Fatalf("VN versions %v: want %v and a reserved version", vs, ours)
			}
			if reply[0]&0x80 == 0 {
				t.Fatalf("VN first byte %#x: not a long header", reply[0])
			}
			greases[vs[len(ours)]] = true
		}
		if len(greases) < 2 {
			t.Errorf("%v: the reserved version never changed: %v", ours, greases)
		}
	}
	r := mustNew(t)
	big := unknownVersionDatagram(0xff00001d, bytes.Repeat([]byte{1}, 255), bytes.Repeat([]byte{2}, 255), 1200)
	var h wire.LongHeader
	if _, reply := r.Examine(big, &h, nil); len(reply) != MaxVersionNegotiationLen {
		t.Fatalf("VN for 255-byte CIDs is %d bytes, MaxVersionNegotiationLen %d", len(reply), MaxVersionNegotiationLen)
	}
	// Appended after what the buffer held.
	if _, reply := r.Examine(big, &h, []byte("prefix")); !bytes.HasPrefix(reply, []byte("prefix")) || len(reply) != 6+MaxVersionNegotiationLen {
		t.Fatalf("VN not appended: %d bytes", len(reply))
	}
}

func TestDCIDAcceptable(t *testing.T) {
	for _, tc := range []struct {
		n     int
		retry bool
		want  bool
	}{{8, false, true}, {20, false, true}, {7, false, false}, {0, false, false}, {4, true, true}, {0, true, true}} {
		h := wire.LongHeader{DestConnID: make([]byte, tc.n)}
		if got := DCIDAcceptable(&h, tc.retry); got != tc.want {
			t.Errorf("DCID of %d bytes, valid retry token %v: %v", tc.n, tc.retry, got)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	seen := map[string]bool{}
	for o := range numOutcomes {
		s := o.String()
		if s == "" || s == "unknown" || seen[s] {
			t.Errorf("outcome %d: label %q", o, s)
		}
		seen[s] = true
	}
	if numOutcomes.String() != "unknown" {
		t.Error("out-of-range outcome has a label")
	}
}
