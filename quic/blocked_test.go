package quic

import (
	"context"
	"testing"
)

func blockedRecvOf(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats.blockedRecv
}

// lazyServer accepts connections and streams but never reads, so that the
// client runs into every limit; it returns its first connection.
func lazyServer(t *testing.T, ctx context.Context, conf *Config) (*Listener, <-chan *Conn) {
	t.Helper()
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	first := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		first <- c
	}()
	return ln, first
}

// TestBlockedFramesSent: a client held back by the peer's stream limit,
// stream window and connection window says so with STREAMS_BLOCKED,
// STREAM_DATA_BLOCKED and DATA_BLOCKED (RFC 9000 section 4.1), which the
// peer receives.
func TestBlockedFramesSent(t *testing.T) {
	ctx := testCtx(t)
	ln, first := lazyServer(t, ctx, &Config{
		MaxIncomingStreams:             2,
		InitialStreamReceiveWindow:     16 << 10,
		MaxStreamReceiveWindow:         16 << 10,
		InitialConnectionReceiveWindow: 24 << 10,
		MaxConnectionReceiveWindow:     24 << 10,
	})
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	sc := <-first

	// The first stream fills its 16 KiB window (STREAM_DATA_BLOCKED), then
	// the second the rest of the connection's 24 KiB (DATA_BLOCKED).
	for i := range 2 {
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = s.Write(make([]byte, 64<<10)) }()
		waitFor(t, "a blocked frame at the server", func() bool { return blockedRecvOf(sc) >= uint64(i+1) })
	}

	// A third stream waits for MAX_STREAMS.
	opened := make(chan error, 1)
	openCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := c.OpenStreamSync(openCtx)
		opened <- err
	}()
	waitFor(t, "STREAMS_BLOCKED at the server", func() bool { return blockedRecvOf(sc) >= 3 })
	cancel()
	if err := <-opened; err == nil {
		t.Fatal("a stream opened beyond the server's limit")
	}
}
