package quiclb

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

var testKey = Key{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}

func mustCodec(tb testing.TB, cfg Config) *Codec {
	tb.Helper()
	c, err := NewCodec(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// sealWithNonce is Put with a chosen nonce and worker octet (generation
// bit included), for reproducible IDs.
func (c *Codec) sealWithNonce(octet int, nonce []byte) []byte {
	cid := make([]byte, c.n)
	copy(cid[c.WorkerOffset()+1:], nonce[:c.nonceLen])
	c.seal(cid, byte(octet))
	return cid
}

func TestCodecLayout(t *testing.T) {
	for _, c := range []struct {
		cfg       Config
		n, offset int
	}{
		{Config{MACKey: &testKey}, 10, 1},
		{Config{}, 6, 1},
		{Config{ConfigID: 2, HostID: []byte{0xa1, 0xa2}, NonceLen: 6, MACKey: &testKey}, 14, 3},
		{Config{ConfigID: 6, HostID: make([]byte, 5), NonceLen: 9, MACKey: &testKey}, 20, 6},
		{Config{HostID: make([]byte, 13), NonceLen: 4}, 19, 14},
	} {
		codec := mustCodec(t, c.cfg)
		if codec.Len() != c.n || codec.WorkerOffset() != c.offset || codec.ServerIDLen() != len(c.cfg.HostID)+1 {
			t.Fatalf("%+v: len %d offset %d, want %d %d", c.cfg, codec.Len(), codec.WorkerOffset(), c.n, c.offset)
		}
		for _, gw := range [][2]int{{0, 0}, {0, 1}, {0, 7}, {0, 127}, {1, 0}, {1, 5}, {1, 127}} {
			g, w := gw[0], gw[1]
			cid, err := codec.AppendGeneration(nil, g, w)
			if err != nil {
				t.Fatal(err)
			}
			id, err := codec.Parse(cid)
			if err != nil || id.Worker != w || id.Generation != g || id.ConfigID != c.cfg.ConfigID ||
				!bytes.Equal(id.ServerID, append(bytes.Clone(c.cfg.HostID), byte(g<<7|w))) {
				t.Fatalf("Parse(%x) = %+v, %v (generation %d worker %d)", cid, id, err, g, w)
			}
			if octet, ok := codec.WorkerOctet(cid); !ok || octet != byte(g<<7|w) {
				t.Fatalf("WorkerOctet(%x) = %#x, %v", cid, octet, ok)
			}
			// A QUIC-LB load balancer configured with ServerIDLen reads
			// the same server ID with the draft's plaintext algorithm.
			cr, sid, _, err := ParsePlaintext(cid, codec.ServerIDLen())
			if err != nil || cr != c.cfg.ConfigID || !bytes.Equal(sid, id.ServerID) {
				t.Fatalf("ParsePlaintext(%x) = %d, %x, %v", cid, cr, sid, err)
			}
			if got, ok := codec.Worker(cid); !ok || got != w {
				t.Fatalf("Worker(%x) = %d, %v", cid, got, ok)
			}
			if codec.Verify(cid) != (c.cfg.MACKey != nil) {
				t.Fatalf("Verify(%x) = %v with MAC %v", cid, codec.Verify(cid), c.cfg.MACKey != nil)
			}
		}
	}
}

// TestGenerationLimits: the worker index has 7 bits, the generation one;
// nothing outside them is encoded (it would change the other field).
func TestGenerationLimits(t *testing.T) {
	codec := mustCodec(t, Config{MACKey: &testKey})
	for _, gw := range [][2]int{{0, 128}, {0, -1}, {2, 0}, {-1, 0}, {1, 128}} {
		if _, err := codec.AppendGeneration(nil, gw[0], gw[1]); err == nil {
			t.Errorf("AppendGeneration(generation %d, worker %d) succeeded", gw[0], gw[1])
		}
		if _, err := codec.GeneratorOf(gw[0], gw[1]); err == nil {
			t.Errorf("GeneratorOf(%d, %d) succeeded", gw[0], gw[1])
		}
	}
	gen, err := codec.GeneratorOf(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := gen.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := codec.Parse(cid); err != nil || id.Generation != 1 || id.Worker != 3 {
		t.Fatalf("generator of generation 1 worker 3 made %x: %+v, %v", cid, id, err)
	}
	// Seal (the agent's Retry SCIDs) and Generator stay in generation 0.
	if cid, _ = codec.Append(nil, 3); cid[codec.WorkerOffset()] != 3 {
		t.Fatalf("Append made worker octet %#x, want 3", cid[codec.WorkerOffset()])
	}
}

func TestCodecRefusesBadConfigs(t *testing.T) {
	for name, cfg := range map[string]Config{
		"unroutable codepoint": {ConfigID: 7},
		"short nonce":          {NonceLen: 3},
		"longer than 20":       {HostID: make([]byte, 10), NonceLen: 5, MACKey: &testKey},
		"host ID of 15":        {HostID: make([]byte, 15), NonceLen: 4},
	} {
		if _, err := NewCodec(cfg); err == nil {
			t.Errorf("%s: NewCodec accepted %+v", name, cfg)
		}
	}
	c := mustCodec(t, Config{MACKey: &testKey})
	if _, err := c.Append(nil, 256); err == nil {
		t.Error("worker 256 accepted")
	}
	if _, err := c.Generator(-1); err == nil {
		t.Error("worker -1 accepted")
	}
	if err := c.Put(make([]byte, 9), 0); !errors.Is(err, ErrLength) {
		t.Errorf("short buffer: %v", err)
	}
}

// TestMACRejectsTampering: changing any bit of an authenticated ID, or
// checking it under another key, makes it fail; so does every one of a
// sample of random IDs of the right length and first octet.
func TestMACRejectsTampering(t *testing.T) {
	c := mustCodec(t, Config{HostID: []byte{9}, MACKey: &testKey})
	other := testKey
	other[0] ^= 1
	oc := mustCodec(t, Config{HostID: []byte{9}, MACKey: &other})
	cid, _ := c.Append(nil, 3)
	if oc.Verify(cid) {
		t.Fatal("ID verifies under another key")
	}
	for i := range len(cid) * 8 {
		b := bytes.Clone(cid)
		b[i/8] ^= 1 << (i % 8)
		if _, ok := c.Worker(b); ok {
			t.Fatalf("bit %d flipped: %x still verifies", i, b)
		}
		if _, err := c.Parse(b); err == nil {
			t.Fatalf("bit %d flipped: Parse accepted %x", i, b)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for range 100000 {
		b := make([]byte, c.Len())
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		b[0] = FirstOctet(0, c.Len())
		if c.Verify(b) {
			hits++
		}
	}
	// Expected 100000 * 2^-32 = 2.3e-5 hits: one would already be a
	// 1-in-43000 event, so any hit means the MAC is broken.
	if hits != 0 {
		t.Fatalf("%d of 100000 random IDs verified", hits)
	}
}

func TestParseErrors(t *testing.T) {
	c := mustCodec(t, Config{ConfigID: 1, MACKey: &testKey})
	cid, _ := c.Append(nil, 0)
	wrongCfg := bytes.Clone(cid)
	wrongCfg[0] = FirstOctet(2, len(cid))
	wrongLen := bytes.Clone(cid)
	wrongLen[0] = FirstOctet(1, len(cid)+1)
	mac := bytes.Clone(cid)
	mac[len(mac)-1] ^= 0x80
	for name, c2 := range map[string]struct {
		b    []byte
		want error
	}{
		"length":      {cid[:9], ErrLength},
		"config":      {wrongCfg, ErrConfigID},
		"self-length": {wrongLen, ErrLength},
		"mac":         {mac, ErrMAC},
	} {
		if _, err := c.Parse(c2.b); !errors.Is(err, c2.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c2.want)
		}
	}
}

func TestWorkerDoesNotAllocate(t *testing.T) {
	c := mustCodec(t, Config{MACKey: &testKey})
	cid, _ := c.Append(nil, 5)
	if n := testing.AllocsPerRun(100, func() { c.Worker(cid) }); n != 0 {
		t.Fatalf("Worker allocates %v times", n)
	}
}

// TestGeneratorPlugsIntoQUIC: the generator, through the quic hook's
// adapter, makes distinct IDs of its worker.
func TestGeneratorPlugsIntoQUIC(t *testing.T) {
	c := mustCodec(t, Config{HostID: []byte{0x42}, MACKey: &testKey})
	gen, err := c.Generator(2)
	if err != nil {
		t.Fatal(err)
	}
	g := quic.ConnectionIDGeneratorFunc(gen.Len(), gen.Fill)
	seen := map[quic.ConnectionID]bool{}
	for range 1000 {
		id, err := g.GenerateConnectionID()
		if err != nil || id.Len() != g.ConnectionIDLen() {
			t.Fatalf("%v, %v", id, err)
		}
		if w, ok := c.Worker(id.Bytes()); !ok || w != 2 {
			t.Fatalf("ID %v: worker %d, %v", id, w, ok)
		}
		if seen[id] {
			t.Fatalf("duplicate %v", id)
		}
		seen[id] = true
	}
}

// TestKeyFromRing pins the derivation: HKDF-Expand-Label(root, "quic-lb
// cid mac", "", 16) for the root secret 00..1f of docs/design.md's vectors.
func TestKeyFromRing(t *testing.T) {
	kr := testutil.KeyRing(t, testutil.Secret(0))
	k := KeyFromRing(kr)
	if got := hex.EncodeToString(k[:]); got != keyVector {
		t.Fatalf("KeyFromRing = %s, want %s", got, keyVector)
	}
}
