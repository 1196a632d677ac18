//go:build linux

package xdp

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/turboretry/turboretry/offload/fastpath"
)

func TestInitialGoesToAgentOrPasses(t *testing.T) {
	p := loadFiltering(t)
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	// No AF_XDP socket in tr_xsks: bpf_redirect_map returns the fallback
	// action from its flags, so the test run reports XDP_PASS, not
	// XDP_REDIRECT, and the Initial reaches the kernel stack.
	expect(t, p, udp4(testPort, longPacket(typeInitial, 1, dcid, 1200)), xdpPass, PassNoSocket)
	expect(t, p, udp6(testPort, longPacket(typeInitial, 1, dcid, 1350)), xdpPass, PassNoSocket)
	// An unknown version goes to the agent too (Version Negotiation).
	expect(t, p, udp4(testPort, longPacket(typeHandshake, 0x1a2a3a4a, dcid, 1200)), xdpPass, PassNoSocket)
	expect(t, p, udp4(testPort, longPacket(typeInitial, 0xff00001d, dcid, 1200)), xdpPass, PassNoSocket)
	// Too small for an Initial (RFC 9000, section 14.1): dropped.
	expect(t, p, udp4(testPort, longPacket(typeInitial, 1, dcid, 1199)), xdpDrop, DropSmallInitial)
	// Retry and Version Negotiation never travel to a server.
	expect(t, p, udp4(testPort, longPacket(typeRetry, 1, dcid, 100)), xdpDrop, DropUnexpected)
	expect(t, p, udp4(testPort, longPacket(typeInitial, 0, dcid, 1200)), xdpDrop, DropUnexpected)
}

func TestShortHeaderByCache(t *testing.T) {
	p := loadFiltering(t)
	r := rand.New(rand.NewPCG(1, 2))
	known := randomCID(r, 8)
	if err := p.Cache().Insert(known); err != nil {
		t.Fatal(err)
	}
	for name, mk := range map[string]func(uint16, []byte) []byte{"ipv4": udp4, "ipv6": udp6} {
		t.Run(name, func(t *testing.T) {
			expect(t, p, mk(testPort, shortPacket(known)), xdpPass, PassHit)
			unknown := randomCID(r, 8)
			expect(t, p, mk(testPort, shortPacket(unknown)), xdpDrop, DropMiss)
			// Bytes after the DCID do not matter.
			pkt := shortPacket(known)
			pkt[10] ^= 0xff
			expect(t, p, mk(testPort, pkt), xdpPass, PassHit)
		})
	}
}

func TestLongHeaderByCache(t *testing.T) {
	p := loadFiltering(t)
	r := rand.New(rand.NewPCG(3, 4))
	known := randomCID(r, 8)
	if err := p.Cache().Insert(known); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []byte{typeHandshake, type0RTT} {
		expect(t, p, udp4(testPort, longPacket(typ, 1, known, 60)), xdpPass, PassHit)
		expect(t, p, udp6(testPort, longPacket(typ, 1, known, 60)), xdpPass, PassHit)
		expect(t, p, udp4(testPort, longPacket(typ, 1, randomCID(r, 8), 60)), xdpDrop, DropMiss)
		// A longer DCID (a client-chosen one, as 0-RTT packets carry) is
		// keyed by its first CIDLen bytes; a shorter one cannot be ours.
		expect(t, p, udp4(testPort, longPacket(typ, 1, append(append([]byte{}, known...), 9, 9, 9, 9), 60)), xdpPass, PassHit)
		expect(t, p, udp4(testPort, longPacket(typ, 1, append(randomCID(r, 8), known...), 60)), xdpDrop, DropMiss)
		expect(t, p, udp4(testPort, longPacket(typ, 1, known[:7], 60)), xdpDrop, DropCIDLen)
		expect(t, p, udp4(testPort, longPacket(typ, 1, nil, 60)), xdpDrop, DropCIDLen)
	}
}

// TestQUICv2TypeBits: RFC 9369 gives v2 other long-header type bits; its
// Handshake and 0-RTT packets use the cache, its Initials go to the agent.
func TestQUICv2TypeBits(t *testing.T) {
	p := loadFiltering(t)
	r := rand.New(rand.NewPCG(5, 6))
	known := randomCID(r, 8)
	if err := p.Cache().Insert(known); err != nil {
		t.Fatal(err)
	}
	const v2 = 0x6b3343cf
	const (
		v2Retry     = 0
		v2Initial   = 1
		v20RTT      = 2
		v2Handshake = 3
	)
	for _, typ := range []byte{v2Handshake, v20RTT} {
		expect(t, p, udp4(testPort, longPacket(typ, v2, known, 60)), xdpPass, PassHit)
		expect(t, p, udp6(testPort, longPacket(typ, v2, randomCID(r, 8), 60)), xdpDrop, DropMiss)
	}
	expect(t, p, udp4(testPort, longPacket(v2Initial, v2, known, 1200)), xdpPass, PassNoSocket)
	expect(t, p, udp4(testPort, longPacket(v2Initial, v2, known, 1199)), xdpDrop, DropSmallInitial)
	expect(t, p, udp4(testPort, longPacket(v2Retry, v2, known, 100)), xdpDrop, DropUnexpected)
}

func TestPassiveHitReinsertsIntoActive(t *testing.T) {
	p := loadFiltering(t)
	c := p.Cache()
	cid := []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3}
	if err := c.Insert(cid); err != nil {
		t.Fatal(err)
	}
	c.Rotate() // cid now only in PASSIVE (table 0); table 1 ACTIVE and empty
	if c.ActiveIndex() != 1 || tableBitsSet(t, c, 1, cid) || !tableBitsSet(t, c, 0, cid) {
		t.Fatalf("setup: active %d, bits in 1: %v, in 0: %v",
			c.ActiveIndex(), tableBitsSet(t, c, 1, cid), tableBitsSet(t, c, 0, cid))
	}
	expect(t, p, udp4(testPort, shortPacket(cid)), xdpPass, PassHit)
	if !tableBitsSet(t, c, 1, cid) {
		t.Fatal("PASSIVE hit in XDP did not re-insert the CID into the ACTIVE table")
	}
	c.Rotate() // the re-insert keeps it alive across the next rotation
	expect(t, p, udp4(testPort, shortPacket(cid)), xdpPass, PassHit)
	c.Rotate()
	c.Rotate()
	expect(t, p, udp4(testPort, shortPacket(cid)), xdpDrop, DropMiss)
}

func TestOtherTrafficUntouched(t *testing.T) {
	p := loadFiltering(t)
	unknown := []byte{9, 9, 9, 9, 9, 9, 9, 9}
	udpOnPort := udpDatagram(testPort, shortPacket(unknown))
	arp := ethFrame(0x0806, make([]byte, 28))
	cases := map[string][]byte{
		"other udp port v4": udp4(testPort+1, shortPacket(unknown)),
		"other udp port v6": udp6(53, shortPacket(unknown)),
		"tcp to port":       ethFrame(0x0800, ipv4Packet(6, 0, udpOnPort)),
		"tcp6 to port":      ethFrame(0x86dd, ipv6Packet(6, udpOnPort)),
		"arp":               arp,
		"ethernet only":     ethFrame(0x0800, nil),
		"truncated ipv4":    udp4(testPort, shortPacket(unknown))[:14+19],
		"truncated ipv6":    udp6(testPort, shortPacket(unknown))[:14+39],
		"truncated udp v4":  udp4(testPort, shortPacket(unknown))[:14+20+7],
		"truncated udp v6":  udp6(testPort, shortPacket(unknown))[:14+40+7],
		"ipv4 options cut":  ethFrame(0x0800, ipv4Packet(17, 10, udpOnPort))[:14+40+4],
		"bad ip version":    ethFrame(0x0800, append([]byte{0x65}, ipv4Packet(17, 0, udpOnPort)[1:]...)),
		"vlan tagged":       ethFrame(0x8100, append([]byte{0, 1, 8, 0}, ipv4Packet(17, 0, udpOnPort)...)),
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) { expect(t, p, frame, xdpPass, PassOther) })
	}
	// IPv4 fragments and IPv6 extension headers are passed, not parsed.
	frag := ipv4Packet(17, 0, udpOnPort)
	frag[6] = 0x20 // MF
	expect(t, p, ethFrame(0x0800, frag), xdpPass, PassUnparsed)
	frag[6], frag[7] = 0, 3 // later fragment
	expect(t, p, ethFrame(0x0800, frag), xdpPass, PassUnparsed)
	hopByHop := append([]byte{17, 0, 1, 4, 0, 0, 0, 0}, udpOnPort...) // next: UDP
	expect(t, p, ethFrame(0x86dd, ipv6Packet(0, hopByHop)), xdpPass, PassUnparsed)
}

func TestIPv4OptionsParsed(t *testing.T) {
	p := loadFiltering(t)
	known := []byte{1, 1, 2, 3, 5, 8, 13, 21}
	if err := p.Cache().Insert(known); err != nil {
		t.Fatal(err)
	}
	for words := 0; words <= 10; words++ {
		hit := ethFrame(0x0800, ipv4Packet(17, words, udpDatagram(testPort, shortPacket(known))))
		expect(t, p, hit, xdpPass, PassHit)
		miss := ethFrame(0x0800, ipv4Packet(17, words, udpDatagram(testPort, shortPacket(known[1:]))))
		expect(t, p, miss, xdpDrop, DropMiss)
	}
}

func TestMalformedOnPortDropped(t *testing.T) {
	p := loadFiltering(t)
	known := []byte{8, 7, 6, 5, 4, 3, 2, 1}
	if err := p.Cache().Insert(known); err != nil {
		t.Fatal(err)
	}
	// Too short to hold a DCID plus the header-protection sample.
	expect(t, p, udp4(testPort, nil), xdpDrop, DropMalformed)
	expect(t, p, udp4(testPort, shortPacket(known)[:20]), xdpDrop, DropMalformed)
	expect(t, p, udp4(testPort, longPacket(typeHandshake, 1, known, 0)[:5]), xdpDrop, DropMalformed)
	long := longPacket(typeHandshake, 1, known, 0)
	long[5] = 21 // DCID longer than QUIC v1 allows
	expect(t, p, udp4(testPort, long), xdpDrop, DropMalformed)
	// UDP length below its own header.
	frame := udp4(testPort, shortPacket(known))
	frame[14+20+4], frame[14+20+5] = 0, 7
	expect(t, p, frame, xdpDrop, DropMalformed)
	// UDP length that leaves the DCID outside the datagram (Ethernet
	// padding after it does not count).
	frame = udp4(testPort, shortPacket(known))
	frame[14+20+4], frame[14+20+5] = 0, 8+1+8
	expect(t, p, frame, xdpDrop, DropMalformed)
}

func TestHeartbeatFailOpen(t *testing.T) {
	const bound = 5e9 // 5 s
	p := loadForTest(t, Config{Port: testPort, Key: testKey, StaleAfter: bound})
	unknown := udp4(testPort, shortPacket([]byte{7, 7, 7, 7, 7, 7, 7, 7}))
	initial := udp4(testPort, longPacket(typeInitial, 1, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 1200))
	small := udp4(testPort, longPacket(typeInitial, 1, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 300))

	// Never beaten: everything on the port passes.
	expect(t, p, unknown, xdpPass, PassFailOpen)
	expect(t, p, initial, xdpPass, PassFailOpen)

	now := MonotonicNow()
	steps := []struct {
		name   string
		beat   uint64
		action uint32
		reason Reason
	}{
		{"fresh", now, xdpDrop, DropMiss},
		{"stale", now - 2*bound, xdpPass, PassFailOpen},
		{"fresh again", now, xdpDrop, DropMiss},
		{"future", now + 3600e9, xdpPass, PassFailOpen},
		{"stopped", 0, xdpPass, PassFailOpen},
	}
	for _, s := range steps {
		if err := p.Beat(s.beat); err != nil {
			t.Fatal(err)
		}
		t.Run(s.name, func(t *testing.T) {
			expect(t, p, unknown, s.action, s.reason)
			if s.reason == PassFailOpen {
				expect(t, p, small, xdpPass, PassFailOpen)
			} else {
				expect(t, p, small, xdpDrop, DropSmallInitial)
			}
		})
	}
}

func TestCIDLengths(t *testing.T) {
	// 8 bytes takes tr_fp_siphash24_8, the others the generic loop.
	for _, n := range []int{1, 5, 8, 16, 17, 20} {
		p := loadForTest(t, Config{Port: testPort, Key: testKey, CIDLen: n, StaleAfter: 3600e9})
		if err := p.Beat(MonotonicNow()); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(n), 5))
		for range 20 {
			known, unknown := randomCID(r, n), randomCID(r, n)
			if err := p.Cache().Insert(known); err != nil {
				t.Fatal(err)
			}
			if got := run(t, p, udp6(testPort, shortPacket(known))); got != xdpPass {
				t.Fatalf("cid len %d: known CID %x: action %d", n, known, got)
			}
			if got := run(t, p, udp4(testPort, longPacket(typeHandshake, 1, known, 100))); got != xdpPass {
				t.Fatalf("cid len %d: known CID %x in Handshake: action %d", n, known, got)
			}
			want := uint32(xdpDrop)
			if p.Cache().Lookup(unknown) { // a Bloom false positive
				want = xdpPass
			}
			if got := run(t, p, udp6(testPort, shortPacket(unknown))); got != want {
				t.Fatalf("cid len %d: unknown CID %x: action %d, want %d", n, unknown, got, want)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrossCheckWithGo runs the same inserts, rotations and lookups on the
// program's shared cache (lookups by XDP) and on a private Go cache
// (lookups by Cache.Lookup): every verdict and, at the end, every table
// word must agree.
func TestCrossCheckWithGo(t *testing.T) {
	p := loadFiltering(t)
	shared := p.Cache()
	ref, err := fastpath.New(testKey, fastpath.DefaultCIDLen)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(6, 7))
	var inserted [][]byte
	hits := 0
	for round := range 3 {
		for range 150 {
			cid := randomCID(r, 8)
			inserted = append(inserted, cid)
			if err := shared.Insert(cid); err != nil {
				t.Fatal(err)
			}
			if err := ref.Insert(cid); err != nil {
				t.Fatal(err)
			}
		}
		probes := append([][]byte{}, inserted...)
		for range 150 {
			probes = append(probes, randomCID(r, 8))
		}
		r.Shuffle(len(probes), func(i, j int) { probes[i], probes[j] = probes[j], probes[i] })
		for _, cid := range probes {
			want := ref.Lookup(cid)
			frame := udp4(testPort, shortPacket(cid))
			if cid[0]&1 == 1 {
				frame = udp6(testPort, longPacket(typeHandshake, 1, cid, 80))
			}
			got := run(t, p, frame)
			if (got == xdpPass) != want {
				t.Fatalf("round %d: CID %x: XDP action %d, Go Lookup %v", round, cid, got, want)
			}
			if want {
				hits++
			}
		}
		shared.Rotate()
		ref.Rotate()
	}
	if hits < len(inserted) {
		t.Fatalf("only %d hits for %d inserted CIDs", hits, len(inserted))
	}
	for i := range 2 {
		a, _ := shared.AppendTable(nil, i)
		b, _ := ref.AppendTable(nil, i)
		if !bytes.Equal(a, b) {
			t.Fatalf("table %d differs between the XDP-shared cache and the Go cache", i)
		}
	}
	if shared.Generation() != ref.Generation() {
		t.Fatalf("generation %d vs %d", shared.Generation(), ref.Generation())
	}
}
