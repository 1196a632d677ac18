//go:build linux

package xdp

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/turboretry/turboretry/quiclb"
)

var fpProbes = flag.Int("fp-probes", 100_000,
	"random DCIDs TestFalsePositiveRateMAC sends through the program (the documented measurement uses 10000000)")

var testMACKey = quiclb.Key{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}

// testCodec is the server's ID layout in these tests: a 1-byte host ID,
// the worker octet, a 4-byte nonce and the MAC (11 bytes).
func testCodec(tb testing.TB) *quiclb.Codec {
	tb.Helper()
	c, err := quiclb.NewCodec(quiclb.Config{ConfigID: 2, HostID: []byte{0x5e}, MACKey: &testMACKey})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// loadMAC loads the program with authenticated IDs and beats.
func loadMAC(tb testing.TB, ids *quiclb.Codec) *Program {
	tb.Helper()
	p := loadForTest(tb, Config{Port: testPort, Key: testKey, IDs: ids, StaleAfter: 3600e9})
	if err := p.Beat(MonotonicNow()); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestAuthenticatedIDsPassWithoutCache: with the cache empty, every
// server ID of every worker and of both generations (a restart in
// progress, docs/operations.md) passes on its MAC in short headers and in
// Handshake and 0-RTT packets, nothing is inserted, and any tampering is
// a cache miss.
func TestAuthenticatedIDsPassWithoutCache(t *testing.T) {
	ids := testCodec(t)
	p := loadMAC(t, ids)
	if p.Config().CIDLen != ids.Len() {
		t.Fatalf("CIDLen %d, want the IDs' %d", p.Config().CIDLen, ids.Len())
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		cid, err := ids.AppendGeneration(nil, i%quiclb.Generations, i%quiclb.MaxWorkers)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, p, udp4(testPort, shortPacket(cid)), xdpPass, PassMAC)
		expect(t, p, udp6(testPort, longPacket(typeHandshake, 1, cid, 80)), xdpPass, PassMAC)
		expect(t, p, udp4(testPort, longPacket(2, 0x6b3343cf, cid, 80)), xdpPass, PassMAC) // QUIC v2 0-RTT
		bad := bytes.Clone(cid)
		bit := r.IntN(len(bad) * 8)
		bad[bit/8] ^= 1 << (bit % 8)
		expect(t, p, udp4(testPort, shortPacket(bad)), xdpDrop, DropMiss)
	}
	cid, _ := ids.Append(nil, 1)
	// A long-header DCID longer than the IDs is a client's choice: the
	// cache decides, even when its prefix would verify.
	expect(t, p, udp4(testPort, longPacket(type0RTT, 1, append(bytes.Clone(cid), 0xee), 80)), xdpDrop, DropMiss)
	for i := range 2 {
		w, _ := p.Cache().Words(i)
		for _, x := range w {
			if x != 0 {
				t.Fatal("the program wrote into the cache")
			}
		}
	}
	// The cache still serves what the MAC cannot cover: a client-chosen
	// 0-RTT DCID, admitted by its first CIDLen bytes.
	client := []byte("a-client-chosen-dcid")
	if err := p.Cache().Insert(client[:ids.Len()]); err != nil {
		t.Fatal(err)
	}
	expect(t, p, udp4(testPort, longPacket(type0RTT, 1, client, 80)), xdpPass, PassHit)
}

func TestConfigIDsChecks(t *testing.T) {
	plain, err := quiclb.NewCodec(quiclb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Config{Port: 1, IDs: plain}).withDefaults(); err == nil {
		t.Error("IDs without a MAC accepted")
	}
	if _, err := (Config{Port: 1, IDs: testCodec(t), CIDLen: 8}).withDefaults(); err == nil {
		t.Error("IDs of 11 bytes with CIDLen 8 accepted")
	}
}

// TestFalsePositiveRateMAC measures how often a DCID an attacker makes up
// passes the MAC check: -fp-probes short-header packets (default 10^5;
// docs/cid.md reports 10^7) whose DCID is random apart from a correct first
// octet, so every probe reaches the SipHash, run through the loaded program
// with BPF_PROG_TEST_RUN and an empty cache. The bound is 1e-6 (2^-32 is
// expected, so even 10^7 probes should see none).
func TestFalsePositiveRateMAC(t *testing.T) {
	ids := testCodec(t)
	p := loadMAC(t, ids)
	frame := udp4(testPort, shortPacket(make([]byte, ids.Len())))
	dcid := frame[14+20+8+1 : 14+20+8+1+ids.Len()]
	first := quiclb.FirstOctet(ids.ConfigID(), ids.Len())
	r := rand.New(rand.NewPCG(2026, 13))
	opts := &ebpf.RunOptions{Data: frame}
	passed := 0
	var w [8]byte
	for range *fpProbes {
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		copy(dcid[1:], w[:])
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		copy(dcid[9:], w[:])
		dcid[0] = first
		act, err := p.objs.TrFastpath.Run(opts)
		if err != nil {
			t.Fatalf("test run: %v", err)
		}
		if act == xdpPass {
			passed++
		}
	}
	c := counters(t, p)
	rate := float64(passed) / float64(*fpProbes)
	t.Logf("%d of %d random DCIDs passed (rate %.3g; 2^-32 = 2.3e-10); counters pass_mac %d drop_miss %d",
		passed, *fpProbes, rate, c[PassMAC], c[DropMiss])
	if c[PassMAC]+c[DropMiss] != uint64(*fpProbes) {
		t.Fatalf("counters saw %d probes, want %d", c[PassMAC]+c[DropMiss], *fpProbes)
	}
	if rate > 1e-6 {
		t.Fatalf("false-positive rate %.3g above 1e-6", rate)
	}
}

// BenchmarkShortHeaderMAC is BenchmarkShortHeaderHit for an authenticated
// ID: the SipHash of the MAC instead of the cache's bit tests.
func BenchmarkShortHeaderMAC(b *testing.B) {
	ids := testCodec(b)
	p := loadMAC(b, ids)
	cid, _ := ids.Append(nil, 1)
	frame := udp4(testPort, shortPacket(cid))
	act, per, err := p.objs.TrFastpath.Benchmark(frame, b.N, b.ResetTimer)
	if err != nil {
		b.Fatal(err)
	}
	if act != xdpPass {
		b.Fatalf("action %d, want pass", act)
	}
	b.ReportMetric(float64(per.Nanoseconds()), "kernel-ns/pkt")
}
