package quic

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/offload/agent"
)

// TestAlwaysRetryServer: with AlwaysRetry both clients see a host Retry,
// and the handshake succeeds only if original_destination_connection_id
// and retry_source_connection_id are what RFC 9000 section 7.3 requires
// (both clients check them).
func TestAlwaysRetryServer(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			// The policy sees the retry token's issue time: the Retry
			// round trip the app tier's histogram records.
			start := time.Now().Truncate(time.Millisecond)
			var issued atomic.Pointer[time.Time]
			always := AlwaysRetry()
			policy := func(in *InitialInfo) AddressDecision {
				if in.Token.Valid && in.Token.Kind == TokenRetry {
					at := in.Token.IssuedAt
					issued.Store(&at)
				}
				return always(in)
			}
			tr, ln, seen := avEchoServerStates(t, ctx, &AddressValidationConfig{Policy: policy, TokenSecret: testTokenSecret})
			var s rwStream
			if peer == "ours" {
				c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				c.mu.Lock()
				retried := c.cids.retrySrc != nil
				c.mu.Unlock()
				if !retried {
					t.Fatal("client saw no Retry")
				}
				if d := c.ConnectionStats().HandshakeDuration; d <= 0 {
					t.Fatalf("HandshakeDuration %v after the handshake", d)
				}
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			} else {
				c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), &quicgo.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			}
			echoCheck(t, s, []byte("validated"))
			if got := seen.list(); len(got) != 1 || got[0] != TokenRetry {
				t.Fatalf("accepted connections validated by %v, want one by a retry token", got)
			}
			st := tr.AddressValidationStats()
			// A post-quantum ClientHello spans two Initials: both get a
			// Retry, the client follows the first.
			if st.RetriesSent == 0 || st.TokensAccepted["host/retry"] != 1 {
				t.Fatalf("stats %+v, want Retries and 1 host retry token accepted", st)
			}
			if st.HandshakesInFlight != 0 {
				t.Errorf("%d handshakes in flight after the echo", st.HandshakesInFlight)
			}
			if at := issued.Load(); at == nil || at.Before(start) || at.After(time.Now()) {
				t.Errorf("the valid retry token's IssuedAt is %v, want between %v and now", at, start)
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	valid := &InitialInfo{Token: TokenInfo{Kind: TokenNewToken, Valid: true}, HandshakesInFlight: 1000}
	none := &InitialInfo{HandshakesInFlight: 5, RemoteAddr: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1)}}
	for _, tc := range []struct {
		name string
		p    AddressPolicy
		in   *InitialInfo
		want AddressDecision
	}{
		{"always/valid", AlwaysRetry(), valid, AddressAccept},
		{"always/none", AlwaysRetry(), none, AddressRetry},
		{"never/none", NeverRetry(), none, AddressAccept},
		{"auto/below", AutoRetry(5), none, AddressAccept},
		{"auto/above", AutoRetry(4), none, AddressRetry},
		{"auto/valid", AutoRetry(0), valid, AddressAccept},
		{"verify/true", VerifySourceAddress(func(net.Addr) bool { return true }), none, AddressRetry},
		{"verify/false", VerifySourceAddress(func(net.Addr) bool { return false }), none, AddressAccept},
		{"verify/valid", VerifySourceAddress(func(net.Addr) bool { return true }), valid, AddressAccept},
	} {
		if got := tc.p(tc.in); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// agentRelay sits between a client and the server. It plays an offload
// agent (offload/agent in host mode, no fast path): the client's Initials
// without a token get the agent's Retry, everything else is relayed. The
// agent binds its tokens to the relay's upstream address, the client
// address the server sees.
type agentRelay struct {
	down, up *net.UDPConn
	server   net.Addr
	w        *agent.Worker
	retries  atomic.Int32
}

func newAgentRelay(t *testing.T, server net.Addr) *agentRelay {
	kr := testutil.KeyRing(t, testTokenSecret)
	eng, err := agent.New(agent.Config{KeyRing: kr})
	if err != nil {
		t.Fatal(err)
	}
	r := &agentRelay{down: listenUDP(t), up: listenUDP(t), server: server, w: eng.Worker(0)}
	upAddr := r.up.LocalAddr().(*net.UDPAddr).AddrPort()
	var client atomic.Pointer[net.UDPAddr]
	go func() {
		buf := make([]byte, 2048)
		out := make([]byte, 0, agent.MaxReplyLen)
		for {
			n, from, err := r.down.ReadFromUDP(buf)
			if err != nil {
				return
			}
			client.Store(from)
			pkt := buf[:n]
			if !hasToken(pkt) {
				v, _, reply := r.w.Process(pkt, upAddr, out)
				if v == agent.SendReply {
					r.retries.Add(1)
					_, _ = r.down.WriteTo(reply, from)
					continue
				}
			}
			_, _ = r.up.WriteTo(pkt, server)
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := r.up.ReadFrom(buf)
			if err != nil {
				return
			}
			if c := client.Load(); c != nil {
				_, _ = r.down.WriteTo(buf[:n], c)
			}
		}
	}()
	return r
}

// hasToken reports whether pkt starts with a client Initial carrying a
// token (QUIC v1 long header).
func hasToken(pkt []byte) bool {
	if len(pkt) < 7 || pkt[0]&0xf0 != 0xc0 {
		return false
	}
	i := 5
	i += 1 + int(pkt[i])
	if i >= len(pkt) {
		return false
	}
	i += 1 + int(pkt[i])
	return i < len(pkt) && pkt[i] != 0
}

// TestAgentIssuedRetryToken: an unmodified quic-go client follows a Retry
// that an agent sent; our host, which never sends a Retry itself here,
// revalidates the agent's token and takes ODCID and RSCID from it.
func TestAgentIssuedRetryToken(t *testing.T) {
	for _, peer := range []string{"quic-go", "ours"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret})
			relay := newAgentRelay(t, ln.Addr())
			addr := relay.down.LocalAddr().String()
			var s rwStream
			if peer == "quic-go" {
				c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			} else {
				c, err := DialAddr(ctx, addr, clientTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			}
			echoCheck(t, s, []byte("via agent"))
			st := tr.AddressValidationStats()
			if relay.retries.Load() == 0 || st.RetriesSent != 0 || st.TokensAccepted["agent/retry"] == 0 {
				t.Fatalf("agent retries %d, host stats %+v: want the agent's Retry only, its token accepted", relay.retries.Load(), st)
			}
		})
	}
}

// TestAgentTokenWrongSecret: a Retry from an agent with another root
// secret is not trusted: the host answers the token with INVALID_TOKEN and
// the client (quic-go's or ours) fails with that error.
func TestAgentTokenWrongSecret(t *testing.T) {
	for _, peer := range []string{"quic-go", "ours"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			other := make([]byte, 32)
			other[0] = 1
			tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: other})
			relay := newAgentRelay(t, ln.Addr())
			addr := relay.down.LocalAddr().String()
			if peer == "quic-go" {
				_, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
				var te *quicgo.TransportError
				if !errors.As(err, &te) || te.ErrorCode != quicgo.InvalidToken {
					t.Fatalf("dial: %v, want INVALID_TOKEN", err)
				}
			} else {
				_, err := DialAddr(ctx, addr, clientTLS(t), nil)
				var te *TransportError
				if !errors.As(err, &te) || te.ErrorCode != InvalidToken || !te.Remote {
					t.Fatalf("dial: %v, want INVALID_TOKEN from the server", err)
				}
			}
			// The client gave up at the first close, but another Initial
			// of its ClientHello may still be in the validator, its
			// rejection counted and its INVALID_TOKEN close not yet: wait
			// until the two counters agree.
			st := tr.AddressValidationStats()
			agree := func() bool {
				return st.InvalidTokenCloses != 0 && st.TokensRejected["agent/bad_tid_mac"] == st.InvalidTokenCloses
			}
			for deadline := time.Now().Add(10 * time.Second); !agree() && time.Now().Before(deadline); st = tr.AddressValidationStats() {
				time.Sleep(5 * time.Millisecond)
			}
			if !agree() {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestAutoRetryUnderLoad: AutoRetry(0) lets the first client in without a
// Retry and retries a client that arrives while a handshake is in flight
// (here a client that sent one Initial and went silent).
func TestAutoRetryUnderLoad(t *testing.T) {
	ctx := testCtx(t)
	tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AutoRetry(0)})
	dialEcho(t, ctx, nil, ln.Addr(), nil)
	if st := tr.AddressValidationStats(); st.RetriesSent != 0 {
		t.Fatalf("idle server sent %d Retries", st.RetriesSent)
	}
	stalled := listenUDP(t)
	if _, err := stalled.WriteTo(buildClientInitial(t, []byte("stalled!"), []byte{1}, nil, 1200), ln.Addr()); err != nil {
		t.Fatal(err)
	}
	dialEcho(t, ctx, nil, ln.Addr(), nil)
	st := tr.AddressValidationStats()
	if st.RetriesSent == 0 || st.TokensAccepted["host/retry"] != 1 {
		t.Fatalf("stats %+v, want a Retry while a handshake was in flight", st)
	}
}

// TestSetTokenSecret: after a secret change the server's tokens from before
// are refused (a NEW_TOKEN token no longer skips the Retry) and new ones
// work; a bad secret or a Transport without a listener is an error.
func TestSetTokenSecret(t *testing.T) {
	ctx := testCtx(t)
	tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret})
	store := newNotifyingStore()
	conf := &Config{TokenStore: store}
	dialEcho(t, ctx, nil, ln.Addr(), conf)
	waitPut(t, ctx, store)

	other := make([]byte, 32)
	copy(other, "another root secret, 32 bytes!!")
	if err := tr.SetTokenSecret(other); err != nil {
		t.Fatal(err)
	}
	dialEcho(t, ctx, nil, ln.Addr(), conf) // carries the old secret's NEW_TOKEN token
	waitPut(t, ctx, store)
	st := tr.AddressValidationStats()
	if st.TokensAccepted["host/new_token"] != 0 || st.TokensRejected["host/bad_tid_mac"] == 0 {
		t.Fatalf("old-secret token: stats %+v, want it rejected (bad_tid_mac)", st)
	}
	dialEcho(t, ctx, nil, ln.Addr(), conf) // the new secret's token
	if st := tr.AddressValidationStats(); st.TokensAccepted["host/new_token"] != 1 {
		t.Fatalf("new-secret token: stats %+v, want it accepted", st)
	}

	if err := tr.SetTokenSecret([]byte("short")); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	bare := &Transport{Conn: listenUDP(t)}
	defer bare.Close()
	if err := bare.SetTokenSecret(other); err == nil {
		t.Error("SetTokenSecret without a listener succeeded")
	}
}

// The policy sees the sender of a batched read (a netip.AddrPort, no
// net.Addr yet) as both RemoteAddr and RemoteAddrPort, an IPv4-mapped
// address unmapped; VerifySourceAddress gets a copy it may keep.
func TestPolicySeesSender(t *testing.T) {
	var seen []string
	var kept []net.Addr
	verify := VerifySourceAddress(func(a net.Addr) bool { kept = append(kept, a); return false })
	policy := func(in *InitialInfo) AddressDecision {
		seen = append(seen, in.RemoteAddr.String()+" "+in.RemoteAddrPort.String())
		verify(in)
		return AddressDrop
	}
	tr := &Transport{Conn: newSinkPacketConn(), AddressValidation: &AddressValidationConfig{Policy: policy}}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	pkt := buildClientInitial(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9}, nil, minInitialSize)
	for _, from := range []string{"[::ffff:198.18.0.7]:4433", "[2001:db8::1]:443", "198.18.0.9:1"} {
		ln.s.handleUnknownLongHeader(receivedPacket{data: pkt, addrPort: netip.MustParseAddrPort(from)})
	}
	want := []string{"198.18.0.7:4433 198.18.0.7:4433", "[2001:db8::1]:443 [2001:db8::1]:443", "198.18.0.9:1 198.18.0.9:1"}
	if !slices.Equal(seen, want) {
		t.Errorf("the policy saw %q, want %q", seen, want)
	}
	if len(kept) != 3 || kept[0].String() != "198.18.0.7:4433" || kept[1].String() != "[2001:db8::1]:443" {
		t.Errorf("VerifySourceAddress's callback kept %v: its addresses changed after the call", kept)
	}
}
