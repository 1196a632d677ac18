package agent

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// agentRetryToken returns a retry token from the agent's own Retry for an
// Initial with odcid from clientAddr, and the RSCID.
func agentRetryToken(t testing.TB, env *testEnv) (tok, rscid []byte) {
	t.Helper()
	reply := mustProcess(t, env.w, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), clientAddr, ReasonRetry)
	var h wire.LongHeader
	if err := wire.ParseLongHeader(reply, &h); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(h.Token), bytes.Clone(h.SrcConnID)
}

func hostNewToken(t *testing.T, env *testEnv, client netip.Addr) []byte {
	t.Helper()
	is, err := env.kr.NewIssuer(token.SourceHost)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := is.AppendNewToken(nil, client, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestNewTokenForwarded: a host-issued new_token token admits the
// Initial's DCID, which the client's 0-RTT packets also carry.
func TestNewTokenForwarded(t *testing.T) { synctest.Test(t, testNewTokenForwarded) }

func testNewTokenForwarded(t *testing.T) {
	env := newTestEnv(t, nil)
	tok := hostNewToken(t, env, clientAddr.Addr())
	time.Sleep(20 * time.Hour) // new_token tokens live 24 h
	dcid := []byte{1, 1, 2, 3, 5, 8, 13, 21, 34}
	// Any port: new_token tokens bind only the IP.
	from := netip.AddrPortFrom(clientAddr.Addr(), 9999)
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, tok, 1200), from, ReasonNewTokenForwarded)
	// The fast path keys a DCID longer than the server's CID length by
	// its first CIDLen bytes.
	if !env.cache.Contains(dcid[:DefaultCIDLen]) || env.cache.len() != 1 {
		t.Fatalf("cache %v, want only the DCID's first %d bytes", env.cache.m, DefaultCIDLen)
	}
	// The 0-RTT packet itself still goes to the fast path, not here.
	mustProcess(t, env.w, longPacket(t, wire.PacketType0RTT, wire.Version1, dcid, cscid, 1200), from, ReasonUnknownConnection)
}

// TestBadNewTokenGetsRetry: RFC 9000 section 8.1.3, a new_token token that
// fails validation is no reason to refuse the client.
func TestBadNewTokenGetsRetry(t *testing.T) { synctest.Test(t, testBadNewTokenGetsRetry) }

func testBadNewTokenGetsRetry(t *testing.T) {
	env := newTestEnv(t, nil)
	tok := hostNewToken(t, env, clientAddr.Addr())
	pkt := clientInitial(t, wire.Version1, odcid, cscid, tok, 1200)
	// Wrong address.
	other := netip.MustParseAddrPort("198.51.100.7:54321")
	reply := mustProcess(t, env.w, pkt, other, ReasonRetryBadNewToken)
	var h wire.LongHeader
	if err := wire.ParseLongHeader(reply, &h); err != nil || h.Type != wire.PacketTypeRetry {
		t.Fatalf("reply: %v %v", h.Type, err)
	}
	// Expired.
	time.Sleep(25 * time.Hour)
	mustProcess(t, env.w, pkt, clientAddr, ReasonRetryBadNewToken)
	if env.cache.len() != 0 {
		t.Fatal("a bad token admitted a CID")
	}
	c := env.w.validator.Counts()
	if c[token.ReasonAddrMismatch] != 1 || c[token.ReasonExpired] != 1 {
		t.Fatalf("validator counts %v", c)
	}
}

// TestBadRetryTokenDropped: every way a retry token can be wrong drops the
// Initial with the validator's reason and admits nothing.
func TestBadRetryTokenDropped(t *testing.T) {
	env := newTestEnv(t, nil)
	tok, rscid := agentRetryToken(t, env)
	initialWith := func(tok []byte) []byte { return clientInitial(t, wire.Version1, rscid, cscid, tok, 1200) }
	flip := func(i int) []byte {
		b := bytes.Clone(tok)
		b[i] ^= 0x01
		return b
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, len(tok))
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	random[0] = 0x00 // source bits 00: no issuer
	cases := []struct {
		name string
		tok  []byte
		from netip.AddrPort
		want token.Reason
	}{
		{"random bytes", random, clientAddr, token.ReasonUnknownSource},
		{"short", tok[:token.HeaderLen+3], clientAddr, token.ReasonMalformed},
		{"type bits", func() []byte { b := bytes.Clone(tok); b[0] |= 0x30; return b }(), clientAddr, token.ReasonUnknownType},
		{"key id", func() []byte { b := bytes.Clone(tok); b[0] ^= 0x08; return b }(), clientAddr, token.ReasonUnknownKey},
		{"TID flip", flip(2), clientAddr, token.ReasonBadTIDMAC},
		{"ciphertext flip", flip(token.HeaderLen + 2), clientAddr, token.ReasonBadTag},
		{"tag flip", flip(len(tok) - 1), clientAddr, token.ReasonBadTag},
		{"R flip", flip(token.HeaderLen - 1), clientAddr, token.ReasonBadTag},
		{"wrong IP", tok, netip.MustParseAddrPort("192.0.2.11:54321"), token.ReasonAddrMismatch},
		{"wrong port", tok, netip.MustParseAddrPort("192.0.2.10:54322"), token.ReasonPortMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustProcess(t, env.w, initialWith(tc.tok), tc.from, ReasonOfToken(tc.want))
		})
	}
	if env.cache.len() != 0 {
		t.Fatalf("bad tokens admitted %v", env.cache.m)
	}
}

// TestRetryTokenExpiredOrFromFuture: a retry token too old, or minted
// ahead of the agent's clock, drops the Initial.
func TestRetryTokenExpiredOrFromFuture(t *testing.T) {
	synctest.Test(t, testRetryTokenExpiredOrFromFuture)
}

func testRetryTokenExpiredOrFromFuture(t *testing.T) {
	env := newTestEnv(t, nil)
	tok, rscid := agentRetryToken(t, env)
	initialWith := func(tok []byte) []byte { return clientInitial(t, wire.Version1, rscid, cscid, tok, 1200) }
	// Expired: retry tokens live 10 s.
	time.Sleep(11 * time.Second)
	mustProcess(t, env.w, initialWith(tok), clientAddr, ReasonOfToken(token.ReasonExpired))
	// From the future: the issuer's clock (here the host's) is ahead of
	// the agent's.
	host, err := env.kr.NewIssuer(token.SourceHost)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := host.AppendRetry(nil, clientAddr, odcid, rscid, time.Now().Add(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mustProcess(t, env.w, initialWith(ahead), clientAddr, ReasonOfToken(token.ReasonFromFuture))
	if env.cache.len() != 0 {
		t.Fatalf("bad tokens admitted %v", env.cache.m)
	}
}

// TestHostRetryTokenAccepted: the universal token works both ways, so a
// retry token the host issued while the agent was away passes the agent.
func TestHostRetryTokenAccepted(t *testing.T) {
	env := newTestEnv(t, nil)
	is, err := env.kr.NewIssuer(token.SourceHost)
	if err != nil {
		t.Fatal(err)
	}
	rscid := []byte{7, 6, 5, 4, 3, 2, 1, 0}
	tok, err := is.AppendRetry(nil, clientAddr, odcid, rscid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version2, rscid, cscid, tok, 1200), clientAddr, ReasonRetryTokenForwarded)
	if !env.cache.Contains(rscid) {
		t.Fatal("RSCID not admitted")
	}
}

func TestReasonTokenMapping(t *testing.T) {
	for tr := token.ReasonMalformed; tr < token.NumReasons; tr++ {
		r := ReasonOfToken(tr)
		want := Drop
		if tr == token.ReasonReplayed {
			want = SendReply // a Retry (replay_test.go)
		}
		if r.TokenReason() != tr || r.Verdict() != want || int(r) >= NumReasons {
			t.Fatalf("token reason %v maps to %v (%d)", tr, r, r)
		}
		if r.String() == "unknown" || r.String() == "" {
			t.Fatalf("no label for %v", tr)
		}
	}
	if ReasonOfToken(token.ReasonNone) != ReasonNone || ReasonRetry.TokenReason() != token.ReasonNone {
		t.Fatal("ReasonNone mapping")
	}
	seen := map[string]bool{}
	for r := Reason(0); int(r) < NumReasons; r++ {
		if seen[r.String()] || r.String() == "unknown" {
			t.Fatalf("label %q of %d missing or repeated", r, r)
		}
		seen[r.String()] = true
	}
}

// refusingCache refuses every CID, as offload/fastpath refuses one that is
// not of its configured length.
type refusingCache struct{}

func (refusingCache) Insert([]byte) error { return errors.New("wrong CID length") }

// TestCacheRefusalIsCountedNotFatal: a CID the cache cannot hold (here the
// client-chosen 9-byte DCID of a new_token Initial) still forwards the
// packet, since the host validates it again, and is counted.
func TestCacheRefusalIsCountedNotFatal(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Cache = refusingCache{} })
	tok := hostNewToken(t, env, clientAddr.Addr())
	dcid := []byte{1, 1, 2, 3, 5, 8, 13, 21, 34}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, tok, 1200), clientAddr, ReasonNewTokenForwarded)
	if got := env.w.Stats().CacheErrors; got != 1 {
		t.Fatalf("CacheErrors = %d, want 1", got)
	}
	env.w.Flush()
	if got := env.eng.Stats().CacheErrors; got != 1 {
		t.Fatalf("published CacheErrors = %d, want 1", got)
	}
}

// TestSetKeyRingSwitchesWorkers: after SetKeyRing the running worker
// refuses the old secret's tokens (a bad new_token token gets a Retry) and
// accepts the new secret's.
func TestSetKeyRingSwitchesWorkers(t *testing.T) {
	env := newTestEnv(t, nil)
	oldTok := hostNewToken(t, env, clientAddr.Addr())
	dcid := []byte{1, 1, 2, 3, 5, 8, 13, 21, 34}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, oldTok, 1200), clientAddr, ReasonNewTokenForwarded)

	kr2 := testutil.KeyRing(t, bytes.Repeat([]byte{7}, token.SecretLen))
	if err := env.eng.SetKeyRing(kr2); err != nil {
		t.Fatal(err)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, oldTok, 1200), clientAddr, ReasonRetryBadNewToken)
	env.kr = kr2
	newTok := hostNewToken(t, env, clientAddr.Addr())
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, newTok, 1200), clientAddr, ReasonNewTokenForwarded)

	if err := env.eng.SetKeyRing(nil); err == nil {
		t.Error("SetKeyRing(nil) succeeded")
	}
}
