package quic

import (
	"context"
	"errors"
	"net"
	"os"
	"reflect"
	"testing"
	"time"
)

// Issue 15: as in quic-go, a handshake that hears nothing for the handshake
// idle timeout fails with IdleTimeoutError (it was HandshakeTimeoutError).
func TestHandshakeIdleTimeoutError(t *testing.T) {
	ctx := testCtx(t)
	silent := listenUDP(t) // reads nothing, answers nothing
	_, err := DialAddr(ctx, silent.LocalAddr().String(), clientTLS(t), &Config{HandshakeIdleTimeout: 200 * time.Millisecond})
	var ie *IdleTimeoutError
	if !errors.As(err, &ie) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("got %v, want IdleTimeoutError", err)
	}
}

// A handshake that keeps hearing from its peer but takes twice the handshake
// idle timeout in all fails with HandshakeTimeoutError; silence fails first
// with IdleTimeoutError (the timers alone, on a connection nobody runs).
func TestHandshakeTimeoutTimers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		started, act time.Duration // ago
		want         error
	}{
		{"active but slow", 2*time.Second + time.Millisecond, 10 * time.Millisecond, &HandshakeTimeoutError{}},
		{"silent", 1500 * time.Millisecond, time.Second + time.Millisecond, &IdleTimeoutError{}},
		{"in time", 1500 * time.Millisecond, 10 * time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newOfflineConn(t)
			c.handshakeComplete, c.handshakeConfirmed = false, false
			c.config.HandshakeIdleTimeout = time.Second
			now := time.Now()
			c.stats.started, c.lastActivity = now.Add(-tc.started), now.Add(-tc.act)
			c.mu.Lock()
			c.onTimers(now)
			err := c.closeErr
			c.mu.Unlock()
			if (tc.want == nil) != (err == nil) || (err != nil && reflect.TypeOf(err) != reflect.TypeOf(tc.want)) {
				t.Fatalf("got %v, want %T", err, tc.want)
			}
		})
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
	// Issue 15: the cause a canceled context carries is what Dial returns,
	// as in quic-go.
	cause := errors.New("the application gave up")
	cctx, ccancel := context.WithCancelCause(ctx)
	go func() {
		time.Sleep(20 * time.Millisecond) // the dial is under way (any moment would do)
		ccancel(cause)
	}()
	if _, err := Dial(cctx, listenUDP(t), silent.LocalAddr(), clientTLS(t), nil); err != cause {
		t.Fatalf("got %v, want the context's cause", err)
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
