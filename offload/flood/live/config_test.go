package live

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/frame"
)

// model is the program's arithmetic in Go (bpf/live.bpf.c): it completes a
// copy of the template frame for one source, port and (random-CID mode)
// pair of CIDs, from the template's constants only.
func model(t *template, mode Mode, payload []byte, sum uint32, src, sport uint32, cids [4]uint32) []byte {
	f := make([]byte, FrameLen)
	copy(f, t.frame)
	var udp uint64
	if mode == Pool {
		copy(f[hdrLen:], payload)
		udp = uint64(t.udpSum) + uint64(sum)
	} else {
		for i, v := range cids {
			off := hdrLen + dcidOff + 4*i
			if i >= 2 {
				off = hdrLen + scidOff + 4*(i-2)
			}
			binary.BigEndian.PutUint32(f[off:], v)
		}
		c := fold64(uint64(halves(cids[2])) + uint64(halves(cids[3])))
		c = (c&0xff)<<8 | c>>8
		udp = uint64(t.udpSum) + uint64(halves(cids[0])) + uint64(halves(cids[1])) + uint64(c)
	}
	copy(f, t.hdr[:])
	src = t.base | src&t.mask
	if sport < firstPort {
		sport += firstPort
	}
	binary.BigEndian.PutUint32(f[ipOff+12:], src)
	binary.BigEndian.PutUint16(f[ipOff+10:], uint16(^fold64(uint64(t.ipSum)+uint64(halves(src)))))
	binary.BigEndian.PutUint16(f[udpOff:], uint16(sport))
	c := uint16(^fold64(udp + uint64(halves(src)) + uint64(sport)))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(f[udpOff+6:], c)
	return f
}

func halves(v uint32) uint32 { return v>>16 + v&0xffff }

func fold64(s uint64) uint32 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint32(s)
}

// TestTemplateSums: frames completed from the template's constants parse
// with valid checksums, for random sources, ports and CIDs, in both modes.
func TestTemplateSums(t *testing.T) {
	g, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []Mode{RandomCIDs, Pool} {
		cfg, err := Config{Target: netip.MustParseAddrPort("198.18.0.2:4433"), Spoof: netip.MustParsePrefix("198.18.128.0/17"),
			Mode: mode, Generator: g, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}.check()
		if err != nil {
			t.Fatal(err)
		}
		tm, err := newTemplate(cfg, net.HardwareAddr{2, 0, 0, 0, 0, 2})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			p, sum := g.Entry(i % g.PoolSize())
			var cids [4]uint32
			for j := range cids {
				cids[j] = rng.Uint32()
			}
			// Include the edge values of the arithmetic.
			src, port := rng.Uint32(), rng.Uint32()&0xffff
			if i < 4 {
				src, port, cids = [4]uint32{0, ^uint32(0), 0, ^uint32(0)}[i], [4]uint32{0, 0xffff, 1023, 1024}[i], [4]uint32{}
			}
			f := model(tm, mode, p, sum, src, port, cids)
			u, err := frame.Parse(f)
			if err != nil {
				t.Fatalf("%v frame %d: %v", mode, i, err)
			}
			if fold64(uint64(words(f[ipOff:udpOff]))) != 0xffff {
				t.Fatalf("%v frame %d: bad IPv4 checksum", mode, i)
			}
			if !cfg.Spoof.Contains(u.SrcIP) || u.SrcPort < firstPort {
				t.Fatalf("%v frame %d: source %v:%d", mode, i, u.SrcIP, u.SrcPort)
			}
		}
	}
}

func TestConfigCheck(t *testing.T) {
	good := Config{Target: netip.MustParseAddrPort("198.18.0.2:4433")}
	reprotect, err := flood.NewGenerator(flood.GeneratorConfig{Reprotect: true})
	if err != nil {
		t.Fatal(err)
	}
	longCID, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: 2, DCIDLen: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"ipv6 target", func(c *Config) { c.Target = netip.MustParseAddrPort("[2001:db8::1]:443") }, ErrConfig},
		{"no port", func(c *Config) { c.Target = netip.MustParseAddrPort("198.18.0.2:0") }, ErrConfig},
		{"spoof outside 198.18.0.0/15", func(c *Config) { c.Spoof = netip.MustParsePrefix("10.0.0.0/8") }, flood.ErrSpoofRange},
		{"spoof wider than 198.18.0.0/15", func(c *Config) { c.Spoof = netip.MustParsePrefix("198.16.0.0/13") }, flood.ErrSpoofRange},
		{"batch", func(c *Config) { c.Batch = 257 }, ErrConfig},
		{"cpu", func(c *Config) { c.CPUs = []int{0, -1} }, ErrConfig},
		{"mode", func(c *Config) { c.Mode = 7 }, ErrConfig},
		{"mac", func(c *Config) { c.DstMAC = net.HardwareAddr{1, 2, 3} }, ErrConfig},
		{"re-protect generator", func(c *Config) { c.Generator = reprotect }, ErrTemplate},
		{"12-byte DCIDs", func(c *Config) { c.Generator = longCID }, ErrTemplate},
	} {
		cfg := good
		c.mod(&cfg)
		if _, err := cfg.check(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	cfg, err := good.check()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Spoof != flood.SpoofRange || cfg.Batch != DefaultBatch || cfg.Generator.PoolSize() != flood.DefaultPoolSize {
		t.Fatalf("defaults not filled in: %+v", cfg)
	}
}
