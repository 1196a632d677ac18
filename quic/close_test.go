package quic

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

func TestCloseWithErrorSeenByQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	if err := c.CloseWithError(7, "bye"); err != nil {
		t.Fatal(err)
	}
	_, err := sc.AcceptStream(ctx)
	var ae *quicgo.ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 7 || ae.ErrorMessage != "bye" || !ae.Remote {
		t.Fatalf("quic-go saw %v, want remote application error 7 bye", err)
	}
	// Our side reports the local error.
	_, err = c.AcceptStream(ctx)
	var ours *ApplicationError
	if !errors.As(err, &ours) || ours.Remote || ours.ErrorCode != 7 || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("our AcceptStream: %v", err)
	}
	if cause := connCause(c); !errors.As(cause, &ours) {
		t.Fatalf("context cause %v", cause)
	}
}

func TestQuicGoCloseWithErrorSeenByUs(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	if err := sc.CloseWithError(9, "server says bye"); err != nil {
		t.Fatal(err)
	}
	_, err := c.AcceptStream(ctx)
	var ae *ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 9 || ae.ErrorMessage != "server says bye" || !ae.Remote {
		t.Fatalf("we saw %v, want remote application error 9", err)
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Fatal("error does not match net.ErrClosed")
	}
}

func TestCloseWithErrorOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = sc.CloseWithError(0x1234, "done")
	_, err = c.AcceptStream(ctx)
	var ae *ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 0x1234 || !ae.Remote || ae.ErrorMessage != "done" {
		t.Fatalf("client saw %v", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	ctx := testCtx(t)
	conf := &quicgo.Config{MaxIdleTimeout: 300 * time.Millisecond}
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{MaxIdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AcceptStream(ctx)
	var ie *IdleTimeoutError
	if !errors.As(err, &ie) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("got %v, want IdleTimeoutError", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatal("idle timeout is not a net.Error timeout")
	}
	_, err = sc.AcceptStream(ctx)
	var qie *quicgo.IdleTimeoutError
	if !errors.As(err, &qie) {
		t.Fatalf("quic-go got %v", err)
	}
}

func TestKeepAlivePreventsIdleTimeout(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{MaxIdleTimeout: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{KeepAlivePeriod: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Idle timeouts pass; keep-alives (every 20 ms, a wide margin even
	// on a loaded machine) hold the connection open.
	time.Sleep(1500 * time.Millisecond)
	s, err := sc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcceptStream(ctx); err != nil {
		t.Fatalf("connection died despite keep-alives: %v", err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		ctx := testCtx(t)
		ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		for range 3 {
			c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			ss, err := sc.AcceptStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			_ = c.CloseWithError(0, "")
		}
	}()
	// Goroutines wind down asynchronously: poll, with a hang guard.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
