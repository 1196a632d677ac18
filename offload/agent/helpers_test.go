package agent

import (
	"context"
	"crypto/tls"
	"net/netip"
	"sync"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

var (
	clientAddr  = netip.MustParseAddrPort("192.0.2.10:54321")
	clientAddr6 = netip.MustParseAddrPort("[2001:db8::1]:4433")
)

// fakeCache records admitted CIDs; it implements CIDCache and CIDLookup.
type fakeCache struct {
	mu sync.Mutex
	m  map[string]int
}

func newFakeCache() *fakeCache { return &fakeCache{m: map[string]int{}} }

func (c *fakeCache) Insert(cid []byte) error {
	c.mu.Lock()
	// Look up first: only a new key costs an allocation, so allocation
	// tests can admit the same CID repeatedly.
	if _, ok := c.m[string(cid)]; !ok {
		c.m[string(cid)] = 1
	}
	c.mu.Unlock()
	return nil
}

func (c *fakeCache) Contains(cid []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[string(cid)] > 0
}

func (c *fakeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// insertOnly hides fakeCache's Contains, as a cache without lookup.
type insertOnly struct{ c *fakeCache }

func (c insertOnly) Insert(cid []byte) error { return c.c.Insert(cid) }

func testRoot() []byte {
	root := make([]byte, token.SecretLen)
	for i := range root {
		root[i] = byte(i)
	}
	return root
}

func testKeyRing(t testing.TB) *token.KeyRing {
	t.Helper()
	kr, err := token.NewKeyRing(testRoot(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

type testEnv struct {
	eng   *Engine
	w     *Worker
	cache *fakeCache
	kr    *token.KeyRing
}

// newTestEnv returns an engine with a fakeCache; mod, if not nil, adjusts
// the config first. Tests that let time pass run in a synctest bubble.
func newTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{cache: newFakeCache(), kr: testKeyRing(t)}
	cfg := Config{KeyRing: env.kr, Cache: env.cache}
	if mod != nil {
		mod(&cfg)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.eng, env.w = eng, eng.Worker(0)
	return env
}

// hostValidator is a validator as the host cooperator has one.
func (env *testEnv) hostValidator(t testing.TB) *token.Validator {
	t.Helper()
	v, err := env.kr.NewValidator(token.ValidatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var (
	clientHelloOnce sync.Once
	clientHello     []byte
	clientHelloErr  error
)

// realClientHello returns the ClientHello of a crypto/tls QUIC client, the
// bytes it asks to send at the Initial encryption level.
func realClientHello(t testing.TB) []byte {
	t.Helper()
	clientHelloOnce.Do(func() {
		tp := wire.DefaultTransportParameters()
		tp.InitialSourceConnectionID = []byte{1, 2, 3, 4, 5, 6, 7, 8}
		tp.HasInitialSourceConnectionID = true
		tp.InitialMaxData = 1 << 20
		params, err := tp.Marshal(nil, protocol.PerspectiveClient)
		if err != nil {
			clientHelloErr = err
			return
		}
		qc := tls.QUICClient(&tls.QUICConfig{TLSConfig: &tls.Config{
			ServerName: "example.com",
			NextProtos: []string{"h3"},
			MinVersion: tls.VersionTLS13,
			// X25519 alone keeps the ClientHello in one Initial; the
			// hybrid post-quantum key share would not fit.
			CurvePreferences: []tls.CurveID{tls.X25519},
		}})
		defer qc.Close()
		qc.SetTransportParameters(params)
		if clientHelloErr = qc.Start(context.Background()); clientHelloErr != nil {
			return
		}
		for {
			ev := qc.NextEvent()
			if ev.Kind == tls.QUICNoEvent {
				break
			}
			if ev.Kind == tls.QUICWriteData && ev.Level == tls.QUICEncryptionLevelInitial {
				clientHello = append(clientHello, ev.Data...)
			}
		}
	})
	if clientHelloErr != nil {
		t.Fatal(clientHelloErr)
	}
	if len(clientHello) == 0 {
		t.Fatal("crypto/tls produced no ClientHello")
	}
	return clientHello
}

// clientInitial builds a protected client Initial of version v carrying the
// ClientHello, padded so the datagram is size bytes (or as small as the
// content allows).
func clientInitial(t testing.TB, v wire.Version, dcid, scid, tok []byte, size int) []byte {
	t.Helper()
	ch := realClientHello(t)
	sealer, _, err := handshake.NewInitialKeys(dcid, handshake.Version(v), true)
	if err != nil {
		t.Fatal(err)
	}
	h := wire.LongHeader{Type: wire.PacketTypeInitial, Version: v, DestConnID: dcid, SrcConnID: scid, Token: tok}
	b := wire.AppendLongHeader(make([]byte, 0, size+len(ch)+128), &h, 4, 2)
	lenOff, pnOff := len(b)-2, len(b)
	b = wire.AppendPacketNumber(b, 0, 4)
	b = wire.AppendCryptoFrame(b, 0, ch)
	if pad := size - sealer.Overhead() - len(b); pad > 0 {
		b = append(b, make([]byte, pad)...) // PADDING frames
	}
	wire.PutVarintWithLen(b[lenOff:], uint64(len(b)-pnOff+sealer.Overhead()), 2)
	b, err = sealer.ProtectPacket(b, pnOff, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// longPacket builds an unprotected long header packet of type typ, padded to
// size bytes; the agent never removes protection, so this is enough for
// non-Initial types.
func longPacket(t testing.TB, typ wire.PacketType, v wire.Version, dcid, scid []byte, size int) []byte {
	t.Helper()
	h := wire.LongHeader{Type: typ, Version: v, DestConnID: dcid, SrcConnID: scid}
	b := wire.AppendLongHeader(nil, &h, 4, 2)
	lenOff, pnOff := len(b)-2, len(b)
	b = wire.AppendPacketNumber(b, 1, 4)
	if pad := size - len(b); pad > 0 {
		b = append(b, make([]byte, pad)...)
	}
	wire.PutVarintWithLen(b[lenOff:], uint64(len(b)-pnOff), 2)
	return b
}

// unknownVersionPacket builds a long header of version v of size bytes.
func unknownVersionPacket(v uint32, dcid, scid []byte, size int) []byte {
	b := []byte{0xc0, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), byte(len(dcid))}
	b = append(b, dcid...)
	b = append(b, byte(len(scid)))
	b = append(b, scid...)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

func mustProcess(t testing.TB, w *Worker, pkt []byte, from netip.AddrPort, want Reason) []byte {
	t.Helper()
	v, r, reply := w.Process(pkt, from, make([]byte, 0, MaxReplyLen))
	if r != want {
		t.Fatalf("Process: reason %v, want %v", r, want)
	}
	if v != want.Verdict() {
		t.Fatalf("Process: verdict %v for reason %v, want %v", v, r, want.Verdict())
	}
	if (v == SendReply) != (len(reply) > 0) {
		t.Fatalf("Process: verdict %v with a %d-byte reply", v, len(reply))
	}
	return reply
}

var (
	odcid = []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}
	cscid = []byte{0xf0, 0x67, 0xa5, 0x50}
)
