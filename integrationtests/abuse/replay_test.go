//go:build linux

package abuse

import (
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// replayStore is a quic-go TokenStore that keeps the first NEW_TOKEN
// token it is given and hands it out on every dial, as an attacker
// replaying a captured token would.
type replayStore struct {
	mu  sync.Mutex
	tok *quicgo.ClientToken
	got chan struct{} // closed when the first token arrives
}

func (r *replayStore) Pop(string) *quicgo.ClientToken {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tok
}

func (r *replayStore) Put(_ string, tok *quicgo.ClientToken) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tok == nil {
		r.tok = tok
		close(r.got)
	}
}

// TestNewTokenReplay: the server's NEW_TOKEN tokens are single-use (RFC
// 9000 8.1.4). quic-go's client gets a token on a first connection,
// spends it on a second (accepted, no Retry), and presents it again on a
// third: the server refuses it as replayed and sends a Retry, through
// which the client still connects. The token package and the quic and
// agent tests cover the replay filter itself.
func TestNewTokenReplay(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := ctxFor(t)
	store := &replayStore{got: make(chan struct{})}
	conf := &quicgo.Config{TokenStore: store}
	dial := func(what string) *quicgo.Conn {
		t.Helper()
		c, err := quicgo.DialAddr(ctx, s.addr, s.clientTLS("h3"), conf)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return c
	}
	// The token comes once the handshake is confirmed.
	c := dial("first connection")
	select {
	case <-store.got:
	case <-time.After(time.Minute):
		t.Fatal("the server sent no NEW_TOKEN token")
	}
	c.CloseWithError(0, "")
	accepted := series("turboretry_quic_tokens_accepted_total", "source", "host", "type", "new_token")
	replayed := series("turboretry_quic_tokens_rejected_total", "source", "host", "reason", "replayed")
	m0 := s.scrape()
	dial("second connection, spending the token").CloseWithError(0, "")
	m1 := s.scrape()
	dial("third connection, replaying the token").CloseWithError(0, "")
	m2 := s.scrape()
	t.Logf("spent: %.0f accepted, %.0f Retries; replayed: %.0f refused as replayed, %.0f Retries",
		m1[accepted]-m0[accepted], m1[mRetries]-m0[mRetries], m2[replayed]-m1[replayed], m2[mRetries]-m1[mRetries])
	if m1[accepted]-m0[accepted] != 1 || m1[mRetries] != m0[mRetries] {
		t.Errorf("spending the token: %.0f tokens accepted and %.0f Retries, want 1 and 0", m1[accepted]-m0[accepted], m1[mRetries]-m0[mRetries])
	}
	// quic-go's ClientHello (with a post-quantum key share) takes two
	// Initials, and each one carrying the replayed token may be refused
	// and answered; the client follows the first Retry.
	if m2[replayed]-m1[replayed] < 1 || m2[mRetries]-m1[mRetries] < 1 || m2[accepted] != m1[accepted] {
		t.Errorf("replaying the token: %.0f refused as replayed, %.0f Retries, %.0f accepted; want >= 1, >= 1, 0",
			m2[replayed]-m1[replayed], m2[mRetries]-m1[mRetries], m2[accepted]-m1[accepted])
	}
	checkNoPanics(t, m2)
}
