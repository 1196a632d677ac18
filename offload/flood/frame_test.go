package flood

import (
	"encoding/binary"
	"errors"
	"math/big"
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/offload/frame"
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

// checkFrame verifies a FrameSource frame independently of the codec: its
// length, Don't Fragment, and both checksums against refChecksum.
func checkFrame(t *testing.T, f []byte) {
	t.Helper()
	const eth = frame.EthHeaderLen
	if len(f) != FrameLen {
		t.Fatalf("frame of %d bytes, want %d", len(f), FrameLen)
	}
	ip := append([]byte(nil), f[eth:eth+frame.IPv4HeaderLen]...)
	if ip[6]&0x40 == 0 {
		t.Fatal("Don't Fragment not set")
	}
	gotIP := binary.BigEndian.Uint16(ip[10:])
	ip[10], ip[11] = 0, 0
	if want := refChecksum(ip); gotIP != want {
		t.Fatalf("IPv4 checksum %#04x, reference %#04x", gotIP, want)
	}
	udp := append([]byte(nil), f[eth+frame.IPv4HeaderLen:]...)
	got := binary.BigEndian.Uint16(udp[6:])
	udp[6], udp[7] = 0, 0
	pseudo := append(append([]byte(nil), ip[12:20]...), 0, 17, byte(len(udp)>>8), byte(len(udp)))
	// A computed 0 is sent as 0xffff: 0 means "no checksum" over IPv4.
	if want := refChecksum(pseudo, udp); got != want && !(want == 0 && got == 0xffff) {
		t.Fatalf("UDP checksum %#04x, reference %#04x", got, want)
	}
}

// TestFrameChecksumsIndependent checks frames from both generator modes:
// pool mode, where the payload sums are computed once when the pool is
// built, and re-protect mode, where each payload is summed per frame. A
// buffer without room is replaced, not overrun.
func TestFrameChecksumsIndependent(t *testing.T) {
	for _, reprotect := range []bool{false, true} {
		gen, err := NewGenerator(GeneratorConfig{PoolSize: 4, Reprotect: reprotect})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := NewFrameSource(gen, FrameConfig{Target: netip.MustParseAddrPort("10.0.0.2:4433")})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			buf := make([]byte, 0, FrameLen)
			if i%3 == 2 {
				buf = nil
			}
			f, err := fs.Next(buf)
			if err != nil {
				t.Fatal(err)
			}
			checkFrame(t, f)
		}
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
			h, err := frame.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			dst := netip.AddrPortFrom(h.DstIP, h.DstPort)
			if len(f) != FrameLen || dst != target || h.Dst != BroadcastMAC || h.Src != (frame.MAC{2, 0, 0, 0, 0, 1}) {
				t.Fatalf("frame header %+v, %d bytes", h, len(f))
			}
			if !want.Contains(h.SrcIP) || !SpoofRange.Contains(h.SrcIP) || h.SrcPort < 1024 {
				t.Fatalf("source %v:%d outside %v", h.SrcIP, h.SrcPort, want)
			}
			if _, err := OpenInitial(h.Payload); err != nil {
				t.Fatal(err)
			}
			srcs[h.SrcIP] = true
			ports[h.SrcPort] = true
			if checked < 20 { // the cached payload sums, checked independently
				checked++
				checkFrame(t, f)
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
