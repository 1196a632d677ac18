package quic

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
)

// callbackLink is a link with enough round trip for receive windows to
// auto-tune.
var callbackLink = simnet.LinkConfig{Delay: 10 * time.Millisecond}

// smallWindows makes a transfer of a few MiB grow the connection window
// several times.
func smallWindows(allow func(*Conn, uint64) bool) *Config {
	return &Config{
		InitialConnectionReceiveWindow: 32 << 10,
		InitialStreamReceiveWindow:     32 << 10,
		MaxConnectionReceiveWindow:     4 << 20,
		AllowConnectionWindowIncrease:  allow,
	}
}

// connWindow returns c's connection receive window.
func connWindow(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flow.recv.Window()
}

// callIntoConn calls into c the way a resource manager does from its
// callbacks (libp2p's asks for the connection's state); with the
// connection's lock held by the caller, the first call never returns.
func callIntoConn(t *testing.T, c *Conn) {
	_ = c.ConnectionState()
	_ = c.ConnectionStats()
	if err := c.Context().Err(); err != nil {
		t.Errorf("callback on a closed connection: %v", err)
	}
}

// TestAllowWindowIncreaseCallsIntoConn: AllowConnectionWindowIncrease may
// call methods of the connection (a libp2p resource manager asks for its
// ConnectionState); with the callback run under the connection's lock the
// connection deadlocked at its first window growth. With quic-go as the
// peer, our client (download) and our server (upload) each grow their
// window through the callback and the transfer completes.
func TestAllowWindowIncreaseCallsIntoConn(t *testing.T) {
	const size = 3 << 20
	t.Run("client", func(t *testing.T) {
		simTest(t, callbackLink, func(t *testing.T, s *sim) {
			addr := s.quicGoServer(&quicgo.Config{})
			var asked, allowed atomic.Int64
			c := s.dial(simClientAddr(1), addr, smallWindows(func(c *Conn, delta uint64) bool {
				asked.Add(1)
				callIntoConn(t, c)
				// A stream opened from the callback works too.
				if st, err := c.OpenUniStream(); err == nil {
					_ = st.Close()
				}
				allowed.Add(int64(delta))
				return true
			}))
			echoOurs(t, s.ctx(), c, size)
			if asked.Load() == 0 {
				t.Fatal("AllowConnectionWindowIncrease was never asked")
			}
			if w := connWindow(c); w != 32<<10+uint64(allowed.Load()) {
				t.Fatalf("connection window %d, want the initial 32 KiB plus the %d bytes allowed", w, allowed.Load())
			}
		})
	})
	t.Run("server", func(t *testing.T) {
		simTest(t, callbackLink, func(t *testing.T, s *sim) {
			var asked atomic.Int64
			srv := s.server(nil, smallWindows(func(c *Conn, delta uint64) bool {
				asked.Add(1)
				callIntoConn(t, c)
				return true
			}))
			_, qc := s.dialQuicGo(simClientAddr(1), srv.addr)
			echoN(t, s.ctx(), qc, qc.OpenStreamSync, size)
			if asked.Load() == 0 {
				t.Fatal("AllowConnectionWindowIncrease was never asked")
			}
			if w := connWindow(srv.only(t)); w <= 32<<10 {
				t.Fatalf("server's connection window %d never grew", w)
			}
		})
	})
}

// TestAllowWindowIncreaseClosesConn: the callback may close the connection
// (CloseWithError waits until the connection goroutine wrote the
// CONNECTION_CLOSE); the transfer then fails with that error, and the
// closed connection asks no more.
func TestAllowWindowIncreaseClosesConn(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{})
		var asked atomic.Int64
		c := s.dial(simClientAddr(1), addr, smallWindows(func(c *Conn, delta uint64) bool {
			asked.Add(1)
			_ = c.CloseWithError(7, "over budget")
			return true
		}))
		err := echoErr(s.ctx(), c, c.OpenStreamSync, 3<<20)
		var appErr *ApplicationError
		if !errors.As(err, &appErr) || appErr.ErrorCode != 7 || appErr.Remote {
			t.Fatalf("transfer: %v, want our ApplicationError 7", err)
		}
		time.Sleep(time.Second)
		if n := asked.Load(); n != 1 {
			t.Fatalf("asked %d times, want once: a closed connection asked again", n)
		}
		if w := connWindow(c); w != 32<<10 {
			t.Fatalf("window %d: grew on a closed connection", w)
		}
	})
}

// blockingTokenStore's Put reports each call and waits until the test lets
// it go; Pop has nothing.
type blockingTokenStore struct {
	put     chan struct{}
	release chan struct{}
	stored  atomic.Int64
}

func (*blockingTokenStore) Pop(string) *ClientToken { return nil }

func (s *blockingTokenStore) Put(_ string, tok *ClientToken) {
	if tok == nil || len(tok.data) == 0 {
		panic("Put without a token")
	}
	s.stored.Add(1)
	select {
	case s.put <- struct{}{}:
	default:
	}
	<-s.release
}

// TestTokenStoreOutsideLock: the client gives NEW_TOKEN tokens to its
// TokenStore without holding the connection's lock, so the connection's
// methods work while Put runs (with Put under the lock, ConnectionState
// waited for it forever here).
func TestTokenStoreOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		store := &blockingTokenStore{put: make(chan struct{}, 1), release: make(chan struct{})}
		c := s.dial(simClientAddr(1), srv.addr, &Config{TokenStore: store})
		select {
		case <-store.put:
		case <-s.ctx().Done():
			t.Fatal("no NEW_TOKEN token was stored")
		}
		if st := c.ConnectionState(); !st.TLS.HandshakeComplete {
			t.Fatal("ConnectionState during Put: handshake not complete")
		}
		_ = c.ConnectionStats()
		close(store.release)
		echoOurs(t, s.ctx(), c, 64<<10)
		if store.stored.Load() == 0 {
			t.Fatal("no token stored")
		}
	})
}
