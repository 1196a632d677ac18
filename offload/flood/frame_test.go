package flood

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"net/netip"
	"testing"
)

// refChecksum is an independent Internet checksum (RFC 1071): it adds the
// bytes as a big integer of 16-bit words and folds by reduction modulo
// 0xffff, a different method from the package's loop.
func refChecksum(chunks ...[]byte) uint16 {
	var all []byte
	for _, c := range chunks {
		all = append(all, c...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	sum := new(big.Int)
	for i := 0; i < len(all); i += 2 {
		sum.Add(sum, big.NewInt(int64(all[i])<<8|int64(all[i+1])))
	}
	// End-around carry folding equals mod 0xffff, except that a nonzero
	// multiple of 0xffff folds to 0xffff, not 0.
	r := new(big.Int).Mod(sum, big.NewInt(0xffff)).Int64()
	if r == 0 && sum.Sign() != 0 {
		r = 0xffff
	}
	return ^uint16(r)
}

func testHeader() FrameHeader {
	return FrameHeader{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		Src:    netip.MustParseAddrPort("198.18.3.4:40000"),
		Dst:    netip.MustParseAddrPort("10.0.0.2:4433"),
		TTL:    17,
		ID:     0xbeef,
	}
}

func TestFrameChecksumsIndependent(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, UDPPayloadSize} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i*7 + n)
		}
		h := testHeader()
		f, err := AppendFrame([]byte{0xaa}, &h, payload) // a prefix must be kept
		if err != nil {
			t.Fatal(err)
		}
		if f[0] != 0xaa {
			t.Fatal("prefix overwritten")
		}
		f = f[1:]
		if want := EthHeaderLen + IPv4HeaderLen + UDPHeaderLen + n; len(f) != want {
			t.Fatalf("frame %d bytes, want %d", len(f), want)
		}
		ip := append([]byte(nil), f[EthHeaderLen:EthHeaderLen+IPv4HeaderLen]...)
		gotIP := binary.BigEndian.Uint16(ip[10:])
		ip[10], ip[11] = 0, 0
		if want := refChecksum(ip); gotIP != want {
			t.Errorf("payload %d: IPv4 checksum %#04x, reference %#04x", n, gotIP, want)
		}
		udp := append([]byte(nil), f[EthHeaderLen+IPv4HeaderLen:]...)
		gotUDP := binary.BigEndian.Uint16(udp[6:])
		udp[6], udp[7] = 0, 0
		pseudo := append(append([]byte(nil), ip[12:20]...), 0, protoUDP, byte(len(udp)>>8), byte(len(udp)))
		want := refChecksum(pseudo, udp)
		if want == 0 {
			want = 0xffff
		}
		if gotUDP != want {
			t.Errorf("payload %d: UDP checksum %#04x, reference %#04x", n, gotUDP, want)
		}
		var back FrameHeader
		p, err := ParseFrame(f, &back)
		if err != nil {
			t.Fatal(err)
		}
		if back != h || !bytes.Equal(p, payload) {
			t.Fatalf("round trip: %+v vs %+v", back, h)
		}
	}
}

func TestFrameLength(t *testing.T) {
	h := testHeader()
	f, err := AppendFrame(nil, &h, make([]byte, UDPPayloadSize))
	if err != nil || len(f) != FrameLen || FrameLen != 1242 {
		t.Fatalf("frame %d bytes (FrameLen %d), %v; the paper's frames are 1242", len(f), FrameLen, err)
	}
}

func TestParseFrameRejects(t *testing.T) {
	h := testHeader()
	good, _ := AppendFrame(nil, &h, []byte("hello quic"))
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:30], ErrFrameTruncated},
		{"ethertype", mutate(func(b []byte) { b[12] = 0x86 }), ErrNotIPv4UDP},
		{"ip version", mutate(func(b []byte) { b[14] = 0x65 }), ErrNotIPv4UDP},
		{"ip checksum", mutate(func(b []byte) { b[14+8]++ }), ErrBadChecksum},
		{"udp checksum", mutate(func(b []byte) { b[len(b)-1]++ }), ErrBadChecksum},
		{"protocol", mutate(func(b []byte) { b[14+9] = 6 }), ErrNotIPv4UDP},
		{"total length", mutate(func(b []byte) { b[14+2] = 0xff }), ErrFrameTruncated},
		{"fragment", mutate(func(b []byte) { b[14+6] = 0x20 }), ErrNotIPv4UDP},
	} {
		var back FrameHeader
		if _, err := ParseFrame(c.b, &back); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	// A zero UDP checksum means "none" and is accepted.
	var back FrameHeader
	noSum := mutate(func(b []byte) { b[14+20+6], b[14+20+7] = 0, 0 })
	if _, err := ParseFrame(noSum, &back); err != nil {
		t.Errorf("zero UDP checksum: %v", err)
	}
	h.Src = netip.MustParseAddrPort("[::1]:1")
	if _, err := AppendFrame(nil, &h, nil); !errors.Is(err, ErrFrameAddress) {
		t.Errorf("IPv6 source: %v", err)
	}
	h = testHeader()
	if _, err := AppendFrame(nil, &h, make([]byte, 0xffff)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized payload: %v", err)
	}
}

func TestSpoofedSourcesInRange(t *testing.T) {
	gen, err := NewGenerator(GeneratorConfig{PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	target := netip.MustParseAddrPort("10.200.0.2:4433")
	for _, prefix := range []string{"", "198.18.0.0/15", "198.19.7.0/24", "198.18.0.9/32"} {
		cfg := FrameConfig{Target: target, SrcMAC: []byte{2, 0, 0, 0, 0, 1}}
		want := SpoofRange
		if prefix != "" {
			cfg.Spoof = netip.MustParsePrefix(prefix)
			want = cfg.Spoof
		}
		fs, err := NewFrameSource(gen, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		srcs := map[netip.Addr]bool{}
		ports := map[uint16]bool{}
		buf := make([]byte, 0, FrameLen)
		for range 500 {
			f, err := fs.Next(buf)
			if err != nil {
				t.Fatal(err)
			}
			var h FrameHeader
			p, err := ParseFrame(f, &h)
			if err != nil {
				t.Fatal(err)
			}
			if len(f) != FrameLen || h.Dst != target || h.DstMAC != BroadcastMAC || h.SrcMAC != [6]byte{2, 0, 0, 0, 0, 1} {
				t.Fatalf("frame header %+v, %d bytes", h, len(f))
			}
			if !want.Contains(h.Src.Addr()) || !SpoofRange.Contains(h.Src.Addr()) || h.Src.Port() < 1024 {
				t.Fatalf("source %v outside %v", h.Src, want)
			}
			if _, err := OpenInitial(p); err != nil {
				t.Fatal(err)
			}
			srcs[h.Src.Addr()] = true
			ports[h.Src.Port()] = true
			if checked < 20 { // the cached payload sums, checked independently
				checked++
				udp := append([]byte(nil), f[EthHeaderLen+IPv4HeaderLen:]...)
				got := binary.BigEndian.Uint16(udp[6:])
				udp[6], udp[7] = 0, 0
				a := h.Src.Addr().As4()
				d := h.Dst.Addr().As4()
				pseudo := append(append(a[:], d[:]...), 0, protoUDP, byte(len(udp)>>8), byte(len(udp)))
				if want := refChecksum(pseudo, udp); got != want && !(want == 0 && got == 0xffff) {
					t.Fatalf("UDP checksum %#04x, reference %#04x", got, want)
				}
			}
		}
		if want.Bits() < 24 && (len(srcs) < 400 || len(ports) < 400) {
			t.Fatalf("%v: only %d addresses, %d ports in 500 frames", want, len(srcs), len(ports))
		}
	}
}

func TestSpoofPrefixRejected(t *testing.T) {
	gen, err := NewGenerator(GeneratorConfig{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"198.18.0.0/14", "10.0.0.0/8", "0.0.0.0/0", "198.20.0.0/16", "::/0"} {
		_, err := NewFrameSource(gen, FrameConfig{Target: netip.MustParseAddrPort("10.0.0.2:1"), Spoof: netip.MustParsePrefix(p)})
		if !errors.Is(err, ErrSpoofRange) {
			t.Errorf("--spoof %s: %v, want ErrSpoofRange", p, err)
		}
	}
	for _, c := range []FrameConfig{
		{Target: netip.MustParseAddrPort("[::1]:1")},
		{Target: netip.MustParseAddrPort("10.0.0.2:0")},
		{Target: netip.MustParseAddrPort("10.0.0.2:1"), SrcMAC: []byte{1, 2}},
	} {
		if _, err := NewFrameSource(gen, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
