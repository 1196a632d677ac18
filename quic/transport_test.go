package quic

import (
	"errors"
	"io"
	"net"
	"testing"
)

// TestTransportListenAndDial: two Transports, each listening and dialing
// the other, with 8-byte connection IDs.
func TestTransportListenAndDial(t *testing.T) {
	ctx := testCtx(t)
	a := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	b := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer a.Close()
	defer b.Close()
	la, err := a.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Listen(serverTLS(t), nil); err == nil {
		t.Fatal("second listener on one Transport accepted")
	}
	var conns []*Conn
	for _, d := range []struct {
		from *Transport
		to   *Listener
	}{{a, lb}, {b, la}} {
		c, err := d.from.Dial(ctx, d.to.Addr(), clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		sc, err := d.to.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write([]byte("over a shared transport"))
		_ = s.Close()
		rs, err := sc.AcceptUniStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rs)
		if err != nil || string(got) != "over a shared transport" {
			t.Fatalf("got %q, %v", got, err)
		}
	}
	// Closing a Transport closes its connections and refuses new work.
	a.Close()
	if err := connCause(conns[0]); !errors.Is(err, ErrTransportClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("connection on the closed transport: %v", err)
	}
	if err := connCause(conns[1]); err != nil {
		t.Fatalf("connection on the other transport closed: %v", err)
	}
	if _, err := a.Dial(ctx, lb.Addr(), clientTLS(t), nil); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("dial on closed transport: %v", err)
	}
	// As in quic-go: Accept reports why the listener ended.
	if _, err := la.Accept(ctx); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("accept on closed transport: %v", err)
	}
}

func TestEarlyListener(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddrEarly("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			errc <- err
			return
		}
		// 0.5-RTT: the server may open a stream and send before the
		// client's Finished arrived.
		s, err := c.OpenUniStream()
		if err != nil {
			errc <- err
			return
		}
		_, err = s.Write([]byte("early"))
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	c, err := DialAddrEarly(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	rs, err := c.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rs)
	if err != nil || string(got) != "early" {
		t.Fatalf("got %q, %v", got, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
