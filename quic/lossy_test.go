package quic

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// lossyConn drops, duplicates and reorders the datagrams written through
// it, driven by a seeded generator.
type lossyConn struct {
	net.PacketConn
	mu       sync.Mutex
	rng      *rand.Rand
	held     []byte
	heldAddr net.Addr
	closed   bool
}

const (
	lossRate    = 0.05
	dupRate     = 0.02
	reorderRate = 0.05
)

func newLossyConn(c net.PacketConn, seed uint64) *lossyConn {
	return &lossyConn{PacketConn: c, rng: rand.New(rand.NewPCG(seed, 42))}
}

func (l *lossyConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rng.Float64()
	switch {
	case r < lossRate:
	case r < lossRate+dupRate:
		_, _ = l.PacketConn.WriteTo(b, addr)
		_, _ = l.PacketConn.WriteTo(b, addr)
	case r < lossRate+dupRate+reorderRate && l.held == nil:
		// Hold it back until the next datagram (or a short timer) passes it.
		l.held, l.heldAddr = slices.Clone(b), addr
		time.AfterFunc(2*time.Millisecond, l.flush)
		return len(b), nil
	default:
		_, _ = l.PacketConn.WriteTo(b, addr)
	}
	l.flushLocked()
	return len(b), nil
}

func (l *lossyConn) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *lossyConn) flushLocked() {
	if l.held != nil && !l.closed {
		_, _ = l.PacketConn.WriteTo(l.held, l.heldAddr)
	}
	l.held = nil
}

func (l *lossyConn) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.PacketConn.Close()
}

// ourLossyEchoServer is ourEchoServer on a lossy socket.
func ourLossyEchoServer(t *testing.T, ctx context.Context, seed uint64) net.Addr {
	t.Helper()
	tr := &Transport{Conn: newLossyConn(listenUDP(t), seed)}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	return ln.Addr()
}

func TestLossyTransferOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	addr := ourLossyEchoServer(t, ctx, 1)
	tr := &Transport{Conn: newLossyConn(listenUDP(t), 2)}
	defer tr.Close()
	c, err := tr.Dial(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 4))
	st := c.ConnectionStats()
	t.Logf("client: %+v", st)
	if st.PacketsLost == 0 || st.BytesSent < bigTransfer || st.PacketsReceived == 0 {
		t.Fatalf("implausible statistics after a lossy transfer: %+v", st)
	}
}

func TestLossyTransferQuicGoClientOurServer(t *testing.T) {
	ctx := testCtx(t)
	addr := ourLossyEchoServer(t, ctx, 3)
	tr := &quicgo.Transport{Conn: newLossyConn(listenUDP(t), 4)}
	defer tr.Close()
	c, err := tr.Dial(ctx, addr, clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 5))
}

func TestLossyTransferOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	str := &quicgo.Transport{Conn: newLossyConn(listenUDP(t), 5)}
	defer str.Close()
	ln, err := str.Listen(serverTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				_, _ = io.Copy(s, s)
				_ = s.Close()
			}()
		}
	}()
	tr := &Transport{Conn: newLossyConn(listenUDP(t), 6)}
	defer tr.Close()
	c, err := tr.Dial(ctx, ln.Addr(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 6))
}
