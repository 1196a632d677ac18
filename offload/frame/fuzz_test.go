package frame

import (
	"encoding/hex"
	"net/netip"
	"testing"
)

// FuzzParse checks that Parse never panics, that whatever it
// accepts re-encodes into a frame it parses to the same fields, and that
// ParseLax accepts everything Parse does.
func FuzzParse(f *testing.F) {
	k, _ := hex.DecodeString(kernelFrame)
	f.Add(k)
	f.Add(k[:20])
	f.Add([]byte{})
	for _, u := range []UDP{
		{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2"), SrcPort: 4433, DstPort: 443, Payload: []byte{0xc0, 0, 0, 0, 1}},
		{SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"), TOS: 3, Payload: []byte("quic")},
	} {
		b := make([]byte, u.Len())
		if _, err := u.Encode(b); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// IPv4 with a 4-byte option (IHL 6) and a zero (absent) UDP checksum.
	opt, _ := hex.DecodeString("02005e00000b02005e00000a08004600002000004000401100000102030405060708" + "01010101" + "0001000200080000")
	c := fold(sum(opt[14:38], 0))
	opt[24], opt[25] = byte(c>>8), byte(c)
	f.Add(opt)

	f.Fuzz(func(t *testing.T, b []byte) {
		lax, laxErr := ParseLax(b)
		g, err := Parse(b)
		if err != nil {
			return
		}
		if laxErr != nil || !sameFrame(&g, &lax) {
			t.Fatalf("strict accepted %+v, lax: %+v %v", g, lax, laxErr)
		}
		out := make([]byte, g.Len())
		if _, err := g.Encode(out); err != nil {
			t.Fatalf("re-encode %+v: %v", g, err)
		}
		h, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse %x: %v", out, err)
		}
		if g.TTL == 0 {
			g.TTL = defaultTTL // Encode's reading of TTL 0
		}
		if !sameFrame(&g, &h) {
			t.Fatalf("round trip\n got %+v\nwant %+v", h, g)
		}
	})
}
