package quic

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

func TestHandshakeTimeout(t *testing.T) {
	ctx := testCtx(t)
	silent := listenUDP(t) // reads nothing, answers nothing
	_, err := DialAddr(ctx, silent.LocalAddr().String(), clientTLS(t), &Config{HandshakeIdleTimeout: 200 * time.Millisecond})
	var he *HandshakeTimeoutError
	if !errors.As(err, &he) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("got %v, want HandshakeTimeoutError", err)
	}
}

func TestDialContextCanceled(t *testing.T) {
	ctx := testCtx(t)
	silent := listenUDP(t)
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := DialAddr(dctx, silent.LocalAddr().String(), clientTLS(t), nil)
	if !errors.Is(err, dctx.Err()) || err == nil {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestStreamDeadlines(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{InitialStreamReceiveWindow: 10000, MaxStreamReceiveWindow: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to read: the read deadline expires.
	if err := s.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read: %v", err)
	}
	// The server never reads: flow control and our send buffer fill up,
	// and the write deadline expires.
	if err := s.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Write(make([]byte, 4<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write: %v", err)
	}
	// A deadline in the past fails at once; clearing it works again.
	_ = s.SetDeadline(time.Now().Add(-time.Second))
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with past deadline: %v", err)
	}
}
