package quic

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// cutRelay relays between one client and a server; once cut, it drops
// everything the client sends and the first server datagram of at least
// 500 bytes.
type cutRelay struct {
	*filterRelay
	cut            atomic.Bool
	droppedLarge   atomic.Bool
	droppedFromCli atomic.Int64
}

func newCutRelay(t *testing.T, server net.Addr) *cutRelay {
	r := &cutRelay{}
	r.filterRelay = newFilterRelay(t, server, func(fromClient bool, d []byte) (bool, []byte) {
		switch {
		case !r.cut.Load():
			return true, nil
		case fromClient:
			r.droppedFromCli.Add(1)
			return false, nil
		}
		return len(d) < 500 || !r.droppedLarge.CompareAndSwap(false, true), nil
	})
	return r
}

// TestPTOProbeResendsData: the server's whole response is lost and so is
// everything the client sends afterwards. The server's PTO probe must
// carry the response again (RFC 9002 section 6.2.4): a PING would leave
// it waiting for an acknowledgment that never comes.
func TestPTOProbeResendsData(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t)}
	defer tr.Close()
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	gotRequest, respond := make(chan struct{}), make(chan struct{})
	response := testData(1000, 7)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		if _, err := io.ReadAll(s); err != nil {
			return
		}
		close(gotRequest)
		select {
		case <-respond:
		case <-ctx.Done():
			return
		}
		_, _ = s.Write(response)
		_ = s.Close()
	}()
	relay := newCutRelay(t, tr.Conn.LocalAddr())
	c := dialOurs(t, ctx, relay.down.LocalAddr(), nil)
	// Let the handshake settle before the cut (HANDSHAKE_DONE arrived).
	waitFor(t, "handshake confirmation", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.hs.confirmed
	})
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	select {
	case <-gotRequest:
	case <-ctx.Done():
		t.Fatal("no request at the server")
	}
	relay.cut.Store(true)
	close(respond)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second) // hang guard
	defer cancel()
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		done <- b
	}()
	select {
	case b := <-done:
		if string(b) != string(response) || !relay.droppedLarge.Load() {
			t.Fatalf("read %d bytes (dropped the first response: %v)", len(b), relay.droppedLarge.Load())
		}
	case <-rctx.Done():
		t.Fatalf("the response never arrived; %d client datagrams dropped meanwhile", relay.droppedFromCli.Load())
	}
}
