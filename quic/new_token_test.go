package quic

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/token"
)

// notifyingStore is a TokenStore that signals every Put.
type notifyingStore struct {
	TokenStore
	put chan struct{}
}

func newNotifyingStore() *notifyingStore {
	return &notifyingStore{TokenStore: NewLRUTokenStore(4, 4), put: make(chan struct{}, 16)}
}

func (s *notifyingStore) Put(key string, tok *ClientToken) {
	s.TokenStore.Put(key, tok)
	s.put <- struct{}{}
}

// dialEcho dials from local (nil: a new socket on 127.0.0.1), checks an
// echo and closes the connection.
func dialEcho(t *testing.T, ctx context.Context, local net.PacketConn, server net.Addr, conf *Config) {
	t.Helper()
	if local == nil {
		local = listenUDP(t)
	}
	c, err := Dial(ctx, local, server, clientTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("new token"))
}

func waitPut(t *testing.T, ctx context.Context, s *notifyingStore) {
	t.Helper()
	select {
	case <-s.put:
	case <-ctx.Done():
		t.Fatal("no NEW_TOKEN token arrived")
	}
}

// TestNewTokenSkipsRetry: a client's second connection, with the server's
// NEW_TOKEN token, is not retried; from another address the token does not
// help; a tampered or expired token is ignored (and the client retried).
func TestNewTokenSkipsRetry(t *testing.T) {
	ctx := testCtx(t)
	tr, ln, seen := avEchoServerStates(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret})
	store := newNotifyingStore()
	conf := &Config{TokenStore: store}
	dialEcho(t, ctx, nil, ln.Addr(), conf)
	waitPut(t, ctx, store)
	retries := tr.AddressValidationStats().RetriesSent
	if retries == 0 {
		t.Fatal("first connection was not retried")
	}

	dialEcho(t, ctx, nil, ln.Addr(), conf)
	waitPut(t, ctx, store)
	st := tr.AddressValidationStats()
	if st.RetriesSent != retries || st.TokensAccepted["host/new_token"] != 1 {
		t.Fatalf("second connection: stats %+v, want no new Retry and a new_token accepted", st)
	}
	if got := seen.list(); len(got) != 2 || got[0] != TokenRetry || got[1] != TokenNewToken {
		t.Fatalf("connections validated by %v, want [retry new_token]", got)
	}

	// Another client address (127.0.0.2 on the loopback interface).
	other, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skip("no 127.0.0.2:", err)
	}
	defer other.Close()
	dialEcho(t, ctx, other, ln.Addr(), conf)
	waitPut(t, ctx, store)
	st = tr.AddressValidationStats()
	if st.RetriesSent == retries || st.TokensRejected["host/addr_mismatch"] == 0 {
		t.Fatalf("other address: stats %+v, want a Retry and an addr_mismatch", st)
	}
	retries = st.RetriesSent

	// Tampered: flip a ciphertext bit of the stored token.
	key := "localhost"
	tok := store.Pop(key)
	if tok == nil {
		t.Fatal("store has no token")
	}
	tok.data[len(tok.data)-20] ^= 1
	store.TokenStore.Put(key, tok)
	dialEcho(t, ctx, nil, ln.Addr(), conf)
	waitPut(t, ctx, store)
	st = tr.AddressValidationStats()
	if st.RetriesSent == retries || st.TokensRejected["host/bad_tag"] == 0 {
		t.Fatalf("tampered token: stats %+v, want a Retry and a bad_tag", st)
	}
	retries = st.RetriesSent

	// Expired: a genuine host token issued 25 hours ago.
	kr := testutil.KeyRing(t, testTokenSecret)
	old, err := kr.Mint(nil, token.MintParams{
		Source: token.SourceHost, Type: token.TypeNewToken,
		TimeMs: time.Now().Add(-25 * time.Hour).UnixMilli(),
		Client: netip.MustParseAddrPort("127.0.0.1:0"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for store.Pop(key) != nil {
	}
	store.TokenStore.Put(key, &ClientToken{data: old})
	dialEcho(t, ctx, nil, ln.Addr(), conf)
	st = tr.AddressValidationStats()
	if st.RetriesSent == retries || st.TokensRejected["host/expired"]+st.TokensRejected["host/unknown_key"] == 0 {
		t.Fatalf("expired token: stats %+v, want a Retry and an expired token", st)
	}
}

// TestNewTokenQuicGoClient: quic-go's client stores our NEW_TOKEN token in
// its TokenStore and its next connection skips the Retry.
func TestNewTokenQuicGoClient(t *testing.T) {
	ctx := testCtx(t)
	tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry()})
	store := &notifyingQuicGoStore{TokenStore: quicgo.NewLRUTokenStore(4, 4), put: make(chan struct{}, 16)}
	conf := &quicgo.Config{TokenStore: store}
	dial := func() {
		c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		echoCheck(t, s, []byte("quic-go new token"))
		waitSignal(t, ctx, store.put, "NEW_TOKEN token")
		_ = c.CloseWithError(0, "")
	}
	dial()
	retries := tr.AddressValidationStats().RetriesSent
	dial()
	st := tr.AddressValidationStats()
	if retries == 0 || st.RetriesSent != retries || st.TokensAccepted["host/new_token"] != 1 {
		t.Fatalf("stats %+v (first connection %d Retries), want the second without Retry", st, retries)
	}
}

func TestLRUTokenStore(t *testing.T) {
	s := NewLRUTokenStore(2, 2)
	tk := func(b byte) *ClientToken { return &ClientToken{data: []byte{b}} }
	s.Put("a", tk(1))
	s.Put("a", tk(2))
	s.Put("a", tk(3)) // evicts 1
	s.Put("b", tk(4))
	if got := s.Pop("a"); got == nil || got.data[0] != 3 {
		t.Fatalf("Pop(a) = %v, want the newest token", got)
	}
	s.Put("c", tk(5)) // evicts b, the least recently used
	if s.Pop("b") != nil {
		t.Fatal("b was not evicted")
	}
	if got := s.Pop("a"); got == nil || got.data[0] != 2 {
		t.Fatalf("Pop(a) = %v, want 2", got)
	}
	if s.Pop("a") != nil {
		t.Fatal("a should be empty")
	}
	if got := s.Pop("c"); got == nil || got.data[0] != 5 {
		t.Fatalf("Pop(c) = %v", got)
	}
}
