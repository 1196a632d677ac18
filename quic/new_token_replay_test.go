package quic

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/token"
)

// replayingStore keeps the first NEW_TOKEN token it is given and hands it
// out for every connection, as a client (or an attacker who copied it)
// replaying one token would. It works as our TokenStore and, wrapped,
// as quic-go's.
type replayingStore[T any] struct {
	mu  sync.Mutex
	tok *T
	put chan struct{}
}

func newReplayingStore[T any]() *replayingStore[T] {
	return &replayingStore[T]{put: make(chan struct{}, 16)}
}

func (s *replayingStore[T]) Put(_ string, tok *T) {
	s.mu.Lock()
	if s.tok == nil {
		s.tok = tok
	}
	s.mu.Unlock()
	s.put <- struct{}{}
}

func (s *replayingStore[T]) Pop(string) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok
}

// TestNewTokenReplayGetsRetry: a server whose policy (AutoRetry, idle)
// accepts clients without a Retry accepts a NEW_TOKEN token once; the
// same token on a later connection is refused as replayed and answered
// with a Retry, and the client, quic-go's or ours, still connects.
func TestNewTokenReplayGetsRetry(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			tr, ln, seen := avEchoServerStates(t, ctx, &AddressValidationConfig{TokenSecret: testTokenSecret})
			var dial func()
			if peer == "ours" {
				store := newReplayingStore[ClientToken]()
				conf := &Config{TokenStore: store}
				dial = func() {
					dialEcho(t, ctx, nil, ln.Addr(), conf)
					waitSignal(t, ctx, store.put, "NEW_TOKEN token")
				}
			} else {
				store := newReplayingStore[quicgo.ClientToken]()
				conf := &quicgo.Config{TokenStore: store}
				dial = func() {
					c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), conf)
					if err != nil {
						t.Fatal(err)
					}
					defer c.CloseWithError(0, "")
					s, err := c.OpenStream()
					if err != nil {
						t.Fatal(err)
					}
					echoCheck(t, s, []byte("replayed token"))
					waitSignal(t, ctx, store.put, "NEW_TOKEN token")
				}
			}
			dial() // no token yet: accepted, unvalidated
			dial() // the token's first use
			if st := tr.AddressValidationStats(); st.RetriesSent != 0 || st.TokensAccepted["host/new_token"] != 1 {
				t.Fatalf("first use: stats %+v, want the token accepted and no Retry", st)
			}
			dial() // the same token again
			st := tr.AddressValidationStats()
			if st.RetriesSent == 0 || st.TokensRejected["host/replayed"] == 0 || st.TokensAccepted["host/new_token"] != 1 {
				t.Fatalf("replay: stats %+v, want a Retry and a replayed token", st)
			}
			if got, want := seen.list(), []TokenKind{TokenNone, TokenNewToken, TokenRetry}; !slices.Equal(got, want) {
				t.Fatalf("connections validated by %v, want %v", got, want)
			}
		})
	}
}

// hostValidatorForTest is the host side of address validation on its own,
// on a Transport that nothing reaches.
func hostValidatorForTest(t testing.TB, policy AddressPolicy) *tokenValidator {
	t.Helper()
	tr := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	t.Cleanup(func() { tr.Close() })
	if err := tr.init(); err != nil {
		t.Fatal(err)
	}
	s := &baseServer{t: tr}
	v, err := newTokenValidator(&AddressValidationConfig{Policy: policy, TokenSecret: testTokenSecret}, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mintNewToken(t *testing.T, client netip.Addr) []byte {
	t.Helper()
	kr := testutil.KeyRing(t, testTokenSecret)
	tok, err := kr.Mint(nil, token.MintParams{Source: token.SourceHost, Type: token.TypeNewToken, TimeMs: time.Now().UnixMilli(), Client: netip.AddrPortFrom(client, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestNewTokenRetransmissionAtHost: the host accepts the same Initial
// (token and DCID) again, as a client retransmits it, and refuses the
// token under another DCID with a Retry, whatever the policy would have
// done (NeverRetry included), unless it drops.
func TestNewTokenRetransmissionAtHost(t *testing.T) {
	client := netip.MustParseAddrPort("192.0.2.10:54321")
	remote := net.UDPAddrFromAddrPort(client)
	for _, tc := range []struct {
		name   string
		policy AddressPolicy
		replay initialAction
	}{
		{"AlwaysRetry", AlwaysRetry(), initialRetry},
		{"AutoRetry", AutoRetry(64), initialRetry},
		{"NeverRetry", NeverRetry(), initialRetry},
		{"drop", func(*InitialInfo) AddressDecision { return AddressDrop }, initialDrop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := hostValidatorForTest(t, tc.policy)
			tok := mintNewToken(t, client.Addr())
			hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: []byte{1, 2, 3, 4, 5, 6, 7, 8}, SrcConnID: []byte{7}, Token: tok}
			for i := range 2 {
				if dec := v.decide(&hdr, addrPortOf(remote), nil, new(retryRoom)); tc.replay != initialDrop && (dec.action != initialAccept || !dec.validated || dec.validatedBy != TokenNewToken) {
					t.Fatalf("Initial %d: %+v, want accepted as validated by the token", i, dec)
				}
			}
			again := hdr
			again.DestConnID = []byte{8, 7, 6, 5, 4, 3, 2, 1}
			if dec := v.decide(&again, netip.AddrPortFrom(client.Addr(), 1), nil, new(retryRoom)); dec.action != tc.replay {
				t.Fatalf("replay under another DCID: action %v, want %v", dec.action, tc.replay)
			}
			st := v.m.snapshot()
			if tc.replay != initialDrop && (st.TokensRejected["host/replayed"] != 1 || st.TokensAccepted["host/new_token"] != 2) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestAgentAndHostAgreeOnNewTokens: in the integrated and split modes the
// agent sees a client's Initial first and forwards it; the host then
// checks the same Initial. Neither may take the other's check for a
// replay; both refuse the token under another DCID (the host when the
// agent is down and traffic reaches it directly).
func TestAgentAndHostAgreeOnNewTokens(t *testing.T) {
	kr := testutil.KeyRing(t, testTokenSecret)
	cache, err := fastpath.New(fastpath.KeyFromRing(kr), agent.DefaultCIDLen)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := agent.New(agent.Config{KeyRing: kr, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	w := eng.Worker(0)
	host := hostValidatorForTest(t, AlwaysRetry())
	client := netip.MustParseAddrPort("192.0.2.10:54321")
	tok := mintNewToken(t, client.Addr())
	out := make([]byte, 0, agent.MaxReplyLen)

	check := func(dcid []byte, wantAgent agent.Reason, wantHost initialAction) {
		t.Helper()
		pkt := buildClientInitial(t, dcid, []byte{7, 7, 7, 7}, tok, 1200)
		if _, r, _ := w.Process(pkt, client, out); r != wantAgent {
			t.Fatalf("DCID %x: agent %v, want %v", dcid, r, wantAgent)
		}
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &hdr); err != nil {
			t.Fatal(err)
		}
		if dec := host.decide(&hdr, client, nil, new(retryRoom)); dec.action != wantHost {
			t.Fatalf("DCID %x: host %v, want %v", dcid, dec.action, wantHost)
		}
	}
	dcid := []byte{1, 1, 2, 3, 5, 8, 13, 21, 34}
	check(dcid, agent.ReasonNewTokenForwarded, initialAccept) // forwarded, then revalidated
	check(dcid, agent.ReasonNewTokenForwarded, initialAccept) // a retransmission
	check([]byte{2, 7, 1, 8, 2, 8, 1, 8, 2}, agent.ReasonReplayedNewToken, initialRetry)
	if st := host.m.snapshot(); st.TokensRejected["host/replayed"] != 1 {
		t.Fatalf("host stats %+v", st)
	}
}
