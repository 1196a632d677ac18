package quic

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// echoOurs is echoOver for our connections.
func echoOurs(t *testing.T, ctx context.Context, c *Conn, n int) {
	t.Helper()
	echoN(t, ctx, c, c.OpenStreamSync, n)
}

// migrateOurClient moves c to the socket second with AddPath, Probe and
// Switch.
func migrateOurClient(t *testing.T, ctx context.Context, c *Conn, second net.PacketConn) {
	t.Helper()
	tr := &Transport{Conn: second}
	t.Cleanup(func() { tr.Close() })
	p, err := c.AddPath(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Switch(); !errors.Is(err, ErrPathNotValidated) {
		t.Fatalf("Switch before Probe: %v, want ErrPathNotValidated", err)
	}
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("probing the new path: %v", err)
	}
	if err := p.Switch(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err == nil {
		t.Fatal("closing the path in use succeeded")
	}
	if got, want := c.LocalAddr().String(), second.LocalAddr().String(); got != want {
		t.Fatalf("LocalAddr after the switch = %s, want %s", got, want)
	}
}

// TestPathOurClientQuicGoServer: our client migrates to a second socket
// while connected to quic-go's server, which answers our PATH_CHALLENGE
// and follows us.
func TestPathOurClientQuicGoServer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		addr := s.quicGoServer(nil)
		c, err := s.transport(simClientAddr(1)).Dial(ctx, addr, clientTLS(t), &Config{MaxIdleTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		echoOurs(t, ctx, c, 64<<10)
		migrateOurClient(t, ctx, c, s.socket(simClientAddr(2)))
		echoOurs(t, ctx, c, 1<<20)
	})
}

// TestPathOurClientOurServer: the same against our server, with the
// zero-length connection IDs of Dial; the server follows and validates.
func TestPathOurClientOurServer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.migrationServer()
		c, err := Dial(ctx, s.socket(simClientAddr(1)), srv.addr, clientTLS(t), &Config{MaxIdleTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		echoOurs(t, ctx, c, 64<<10)
		second := s.socket(simClientAddr(2))
		migrateOurClient(t, ctx, c, second)
		echoOurs(t, ctx, c, 1<<20)
		sc := srv.only(t)
		if got, want := sc.RemoteAddr().String(), second.LocalAddr().String(); got != want {
			t.Fatalf("the server sends to %s, want %s", got, want)
		}
		waitFor(t, "the server's validation of the new path", func() bool { return validated(sc) })
		checkMigrations(t, srv, 1, 0)
	})
}

func TestPathErrors(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.migrationServer()
		tr := s.transport(simClientAddr(1))
		c, err := tr.Dial(ctx, srv.addr, clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddPath(tr); err == nil {
			t.Error("AddPath with the connection's own Transport succeeded")
		}
		if _, err := srv.next(t, ctx).AddPath(s.transport(simClientAddr(2))); err == nil {
			t.Error("a server connection added a path")
		}
		other := &Transport{Conn: s.socket(simClientAddr(3)), ConnectionIDLength: 8}
		t.Cleanup(func() { other.Close() })
		if _, err := c.AddPath(other); err == nil {
			t.Error("AddPath accepted a Transport with another connection ID length")
		}
		tr2 := s.transport(simClientAddr(4))
		p, err := c.AddPath(tr2)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := c.AddPath(tr2); err != nil || again != p {
			t.Errorf("adding the same Transport again: %v, %v", again, err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Probe(ctx); !errors.Is(err, ErrPathClosed) {
			t.Errorf("Probe after Close: %v, want ErrPathClosed", err)
		}
		// The closed path's Transport no longer routes the connection.
		tr2.mu.Lock()
		n := 0
		for _, h := range tr2.handlers {
			if h == c {
				n++
			}
		}
		tr2.mu.Unlock()
		if n != 0 {
			t.Errorf("the closed path still routes %d of the connection's IDs", n)
		}
		p3, err := c.AddPath(s.transport(simClientAddr(5)))
		if err != nil {
			t.Fatal(err)
		}
		c.CloseWithError(0, "")
		if err := p3.Probe(ctx); !errors.Is(err, ErrPathClosed) {
			t.Errorf("Probe after the connection closed: %v, want ErrPathClosed", err)
		}
	})
}
