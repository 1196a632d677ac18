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

// migrateOurClient moves c to a new socket with AddPath, Probe and Switch
// and returns that socket.
func migrateOurClient(t *testing.T, ctx context.Context, c *Conn) *net.UDPConn {
	t.Helper()
	second := listenUDP(t)
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
	return second
}

// TestPathOurClientQuicGoServer: our client migrates to a second socket
// while connected to quic-go's server, which answers our PATH_CHALLENGE
// and follows us.
func TestPathOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	addr, err := net.ResolveUDPAddr("udp", quicgoEchoServer(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	c, err := tr.Dial(ctx, addr, clientTLS(t), &Config{MaxIdleTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	echoOurs(t, ctx, c, 64<<10)
	migrateOurClient(t, ctx, c)
	echoOurs(t, ctx, c, 1<<20)
}

// TestPathOurClientOurServer: the same against our server, with the
// zero-length connection IDs of Dial; the server follows and validates.
func TestPathOurClientOurServer(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	c, err := Dial(ctx, listenUDP(t), srv.addr, clientTLS(t), &Config{MaxIdleTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	echoOurs(t, ctx, c, 64<<10)
	second := migrateOurClient(t, ctx, c)
	echoOurs(t, ctx, c, 1<<20)
	sc := srv.only(t)
	if got, want := sc.RemoteAddr().String(), second.LocalAddr().String(); got != want {
		t.Fatalf("the server sends to %s, want %s", got, want)
	}
	waitFor(t, "the server's validation of the new path", func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return !sc.path.validating
	})
	if st := srv.tr.AddressValidationStats(); st.PathMigrations != 1 || st.PathValidationFailures != 0 {
		t.Fatalf("migrations %d, validation failures %d; want 1 and 0", st.PathMigrations, st.PathValidationFailures)
	}
}

func TestPathErrors(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	c, err := tr.Dial(ctx, srv.addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddPath(tr); err == nil {
		t.Error("AddPath with the connection's own Transport succeeded")
	}
	waitFor(t, "the server to accept", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.conns) == 1
	})
	if _, err := srv.only(t).AddPath(&Transport{Conn: listenUDP(t)}); err == nil {
		t.Error("a server connection added a path")
	}
	other := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	t.Cleanup(func() { other.Close() })
	if _, err := c.AddPath(other); err == nil {
		t.Error("AddPath accepted a Transport with another connection ID length")
	}
	tr2 := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr2.Close() })
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
	p3, err := c.AddPath(&Transport{Conn: listenUDP(t)})
	if err != nil {
		t.Fatal(err)
	}
	c.CloseWithError(0, "")
	if err := p3.Probe(ctx); !errors.Is(err, ErrPathClosed) {
		t.Errorf("Probe after the connection closed: %v, want ErrPathClosed", err)
	}
}
