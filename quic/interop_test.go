package quic

import (
	"context"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// quicgoEchoServer starts a quic-go listener that echoes every bidirectional
// stream and returns its address.
func quicgoEchoServer(t *testing.T, ctx context.Context) string {
	t.Helper()
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serveStreams(ctx, ln.Accept, func(s *quicgo.Stream) { echo(s) })
	return ln.Addr().String()
}

// ourEchoServer starts our listener echoing every bidirectional stream.
func ourEchoServer(t *testing.T, ctx context.Context, conf *Config) string {
	t.Helper()
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	return ln.Addr().String()
}

func TestInteropQuicGoClientOurServer(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	echoOver(t, ctx, c, 17)
}

func TestInteropOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	addr := quicgoEchoServer(t, ctx)
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	echoOurs(t, ctx, c, 20)
}
