package frame

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChecksumRFC1071 reproduces the numerical example of RFC 1071
// section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
func TestChecksumRFC1071(t *testing.T) {
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := fold(sum(b, 0)); got != ^uint16(0xddf2) {
		t.Fatalf("checksum %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	// Same bytes through the 2-byte and odd-length paths.
	if got := fold(sum(b[:6], sum(b[6:], 0))); got != ^uint16(0xddf2) {
		t.Fatalf("split checksum %#04x", got)
	}
	if got := fold(sum([]byte{0xab}, 0)); got != ^uint16(0xab00) {
		t.Fatalf("odd byte checksum %#04x", got)
	}
}

// TestIPv4HeaderChecksumVector uses the widely quoted IPv4 header
// 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7 (checksum b861).
func TestIPv4HeaderChecksumVector(t *testing.T) {
	f := UDP{
		SrcIP: netip.MustParseAddr("192.168.0.1"), DstIP: netip.MustParseAddr("192.168.0.199"),
		SrcPort: 1, DstPort: 2, Payload: make([]byte, 0x73-IPv4HeaderLen-UDPHeaderLen),
	}
	buf := make([]byte, f.Len())
	if _, err := f.Encode(buf); err != nil {
		t.Fatal(err)
	}
	want := mustHex(t, "450000730000400040"+"11b861c0a80001c0a800c7")
	if got := buf[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]; !bytes.Equal(got, want) {
		t.Fatalf("IPv4 header\n got %x\nwant %x", got, want)
	}
}

// kernelFrame was built by Linux 6.18 (UDP checksum offload off) for
// 198.18.0.1:9000 -> 198.18.0.2:9001 "hello, AF_XDP".
const kernelFrame = "02005e00000b02005e00000a0800450000293011400040117e8bc6120001c6120002232823290015da6768656c6c6f2c2041465f584450"

func TestParseKernelFrame(t *testing.T) {
	b := mustHex(t, kernelFrame)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := UDP{
		Dst: MAC{2, 0, 0x5e, 0, 0, 0x0b}, Src: MAC{2, 0, 0x5e, 0, 0, 0x0a},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 9000, DstPort: 9001, TTL: 64, ID: 0x3011, Payload: []byte("hello, AF_XDP"),
	}
	if !sameFrame(&f, &want) {
		t.Fatalf("parsed %+v\nwant %+v", f, want)
	}
	// Re-encoding gives the kernel's bytes, both checksums included.
	out := make([]byte, f.Len())
	if _, err := f.Encode(out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Fatalf("re-encoded\n got %x\nwant %x", out, b)
	}
	// With Ethernet padding after the datagram the payload is unchanged.
	padded := append(append([]byte{}, b...), 0, 0, 0, 0, 0)
	if g, err := Parse(padded); err != nil || !bytes.Equal(g.Payload, want.Payload) {
		t.Fatalf("padded frame: %v %q", err, g.Payload)
	}
}

func sameFrame(a, b *UDP) bool {
	return a.Dst == b.Dst && a.Src == b.Src && a.SrcIP == b.SrcIP && a.DstIP == b.DstIP &&
		a.SrcPort == b.SrcPort && a.DstPort == b.DstPort && a.TTL == b.TTL && a.TOS == b.TOS && a.ID == b.ID &&
		bytes.Equal(a.Payload, b.Payload)
}

func TestEncodeParseRoundTrip(t *testing.T) {
	for _, f := range []UDP{
		{SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.19.255.254"), SrcPort: 443, DstPort: 65535, TTL: 1, TOS: 0xb9, ID: 0xbeef, Payload: []byte("odd")},
		{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::ffff"), SrcPort: 4433, DstPort: 1, TTL: 255, TOS: 0x2e, Payload: bytes.Repeat([]byte{0xff}, 1200)},
		{SrcIP: netip.MustParseAddr("::ffff:198.18.0.9"), DstIP: netip.MustParseAddr("198.18.0.10"), Src: MAC{1, 2, 3, 4, 5, 6}, Payload: nil},
		{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2"), Payload: []byte{}},
	} {
		buf := make([]byte, f.Len())
		n, err := f.Encode(buf)
		if err != nil || n != len(buf) {
			t.Fatalf("Encode %v: %d, %v", f.SrcIP, n, err)
		}
		g, err := Parse(buf)
		if err != nil {
			t.Fatalf("Parse %v: %v", f.SrcIP, err)
		}
		want := f
		want.SrcIP, want.DstIP = f.SrcIP.Unmap(), f.DstIP.Unmap()
		if want.TTL == 0 {
			want.TTL = defaultTTL
		}
		if !sameFrame(&g, &want) {
			t.Fatalf("round trip\n got %+v\nwant %+v", g, want)
		}
	}
}

// TestEncodeWithSum checks that a precomputed payload sum gives the same
// frame as Encode, also when the sum is a different representative of the
// same ones' complement value, large enough that adding the pseudo-header
// carries out of 32 bits.
func TestEncodeWithSum(t *testing.T) {
	v4a, v4b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("10.0.0.2")
	v6a, v6b := netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	for _, n := range []int{0, 1, 2, 7, 8, 9, 1200, 1201} {
		for _, fill := range []byte{0x00, 0x5a, 0xff} {
			for _, ips := range [][2]netip.Addr{{v4a, v4b}, {v6a, v6b}} {
				f := UDP{SrcIP: ips[0], DstIP: ips[1], SrcPort: 40000, DstPort: 4433, ID: 7, Payload: bytes.Repeat([]byte{fill}, n)}
				want := make([]byte, f.Len())
				if _, err := f.Encode(want); err != nil {
					t.Fatal(err)
				}
				s := PayloadSum(f.Payload)
				for _, alt := range []uint32{s, s + (0xffffffff-s)/0xffff*0xffff} {
					got := make([]byte, f.Len())
					if _, err := f.EncodeWithSum(got, alt); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%d bytes of %#x, %v, sum %#x: frames differ", n, fill, ips[0], alt)
					}
				}
				if _, err := Parse(want); err != nil {
					t.Fatalf("%d bytes of %#x, %v: %v", n, fill, ips[0], err)
				}
			}
		}
	}
	// A wrong sum must not pass the parser's check.
	f := UDP{SrcIP: v4a, DstIP: v4b, Payload: []byte("payload")}
	buf := make([]byte, f.Len())
	if _, err := f.EncodeWithSum(buf, PayloadSum(f.Payload)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(buf); !errors.Is(err, ErrBadChecksum) {
		t.Fatalf("wrong payload sum: %v, want ErrBadChecksum", err)
	}
}

// TestEncodeInPlace builds the payload where Encode puts it, as a datapath
// does in a UMEM frame.
func TestEncodeInPlace(t *testing.T) {
	buf := make([]byte, 2048)
	f := UDP{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2"), SrcPort: 1, DstPort: 2}
	hl := f.HeaderLen()
	f.Payload = buf[hl : hl+copy(buf[hl:], "retry token bytes")]
	n, err := f.Encode(buf)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(buf[:n])
	if err != nil || string(g.Payload) != "retry token bytes" {
		t.Fatalf("%v %q", err, g.Payload)
	}
}

func TestEncodeErrors(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:2::1")
	cases := []struct {
		f    UDP
		size int
		want error
	}{
		{UDP{SrcIP: v4, DstIP: v6}, 100, ErrBadAddress},
		{UDP{DstIP: v4}, 100, ErrBadAddress},
		{UDP{SrcIP: v4, DstIP: v4, Payload: make([]byte, 10)}, 51, ErrNoSpace},
		{UDP{SrcIP: v4, DstIP: v4, Payload: make([]byte, 65536-28)}, 70000, ErrNoSpace},
		{UDP{SrcIP: v6, DstIP: v6, Payload: make([]byte, 65536-8)}, 70000, ErrNoSpace},
	}
	for i, c := range cases {
		if _, err := c.f.Encode(make([]byte, c.size)); !errors.Is(err, c.want) {
			t.Errorf("case %d: got %v, want %v", i, err, c.want)
		}
	}
	// The largest datagrams still fit.
	f := UDP{SrcIP: v4, DstIP: v4, Payload: make([]byte, 65535-28)}
	if _, err := f.Encode(make([]byte, f.Len())); err != nil {
		t.Errorf("largest IPv4 datagram: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	good := mustHex(t, kernelFrame)
	mod := func(fn func(b []byte) []byte) []byte { return fn(append([]byte{}, good...)) }
	// fix4 recomputes the IPv4 header checksum after a change.
	fix4 := func(b []byte) []byte {
		b[24], b[25] = 0, 0
		c := fold(sum(b[14:34], 0))
		b[24], b[25] = byte(c>>8), byte(c)
		return b
	}
	var v6 []byte
	{
		f := UDP{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2"), Payload: []byte("x")}
		v6 = make([]byte, f.Len())
		if _, err := f.Encode(v6); err != nil {
			t.Fatal(err)
		}
	}
	mod6 := func(fn func(b []byte) []byte) []byte { return fn(append([]byte{}, v6...)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"ethernet only", good[:14], ErrShort},
		{"arp", mod(func(b []byte) []byte { b[12], b[13] = 0x08, 0x06; return b }), ErrNotUDP},
		{"vlan", mod(func(b []byte) []byte { b[12], b[13] = 0x81, 0x00; return b }), ErrNotUDP},
		{"ipv4 cut", good[:30], ErrShort},
		{"ipv4 version", mod(func(b []byte) []byte { b[14] = 0x55; return b }), ErrBadHeader},
		{"ipv4 ihl 4", mod(func(b []byte) []byte { b[14] = 0x44; return b }), ErrBadHeader},
		{"ipv4 total long", mod(func(b []byte) []byte { b[17]++; return b }), ErrShort},
		{"ipv4 total short", mod(func(b []byte) []byte { b[16], b[17] = 0, 10; return b }), ErrBadHeader},
		{"ipv4 checksum", mod(func(b []byte) []byte { b[22]--; return b }), ErrBadChecksum},
		{"tcp", mod(func(b []byte) []byte { b[23] = 6; return fix4(b) }), ErrNotUDP},
		{"fragment", mod(func(b []byte) []byte { b[20] = 0x20; return fix4(b) }), ErrFragment},
		{"udp checksum", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrBadChecksum},
		{"udp length long", mod(func(b []byte) []byte { b[39]++; return b }), ErrBadHeader},
		{"udp length short", mod(func(b []byte) []byte { b[38], b[39] = 0, 7; return b }), ErrBadHeader},
		{"ipv6 cut", v6[:50], ErrShort},
		{"ipv6 version", mod6(func(b []byte) []byte { b[14] = 0x40; return b }), ErrBadHeader},
		{"ipv6 extension header", mod6(func(b []byte) []byte { b[20] = 0; return b }), ErrNotUDP},
		{"ipv6 payload long", mod6(func(b []byte) []byte { b[19]++; return b }), ErrShort},
		{"ipv6 zero checksum", mod6(func(b []byte) []byte { b[60], b[61] = 0, 0; return b }), ErrBadChecksum},
		{"ipv6 no udp header", mod6(func(b []byte) []byte { b[18], b[19] = 0, 4; return b }), ErrShort},
	}
	for _, c := range cases {
		if _, err := Parse(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// TestParseLax accepts what a veth sender with checksum offload emits.
func TestParseLax(t *testing.T) {
	b := mustHex(t, kernelFrame)
	b[40], b[41] = 0x12, 0x34 // a partial (pseudo-header only) checksum
	if _, err := Parse(b); !errors.Is(err, ErrBadChecksum) {
		t.Fatalf("strict: %v", err)
	}
	f, err := ParseLax(b)
	if err != nil || string(f.Payload) != "hello, AF_XDP" {
		t.Fatalf("lax: %v %q", err, f.Payload)
	}
	b[25]++ // the IPv4 header checksum is still checked
	if _, err := ParseLax(b); !errors.Is(err, ErrBadChecksum) {
		t.Fatalf("lax with bad IPv4 checksum: %v", err)
	}
}

func TestFrameAllocs(t *testing.T) {
	b := mustHex(t, kernelFrame)
	out := make([]byte, 2048)
	allocs := testing.AllocsPerRun(100, func() {
		f, err := Parse(b)
		if err != nil {
			panic(err)
		}
		f.SrcIP, f.DstIP = f.DstIP, f.SrcIP
		if _, err := f.Encode(out); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Parse+Encode allocate %v times", allocs)
	}
}

func TestParseIPv4Options(t *testing.T) {
	// IHL 6 (one 4-byte option), UDP checksum 0 (absent, allowed over IPv4).
	b := mustHex(t, "02005e00000b02005e00000a08004600002000004000401100000102030405060708"+"01010101"+"0001000200080000")
	c := fold(sum(b[14:38], 0))
	b[24], b[25] = byte(c>>8), byte(c)
	f, err := Parse(b)
	if err != nil || f.SrcPort != 1 || f.DstPort != 2 || len(f.Payload) != 0 || f.SrcIP != netip.MustParseAddr("1.2.3.4") {
		t.Fatalf("%+v %v", f, err)
	}
}
