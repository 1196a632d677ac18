package quic

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testcert"
)

const testALPN = "turboretry-test"

func serverTLS(t testing.TB) *tls.Config {
	server, _ := testcert.TLS(t, testALPN)
	return server
}

func clientTLS(t testing.TB) *tls.Config {
	_, client := testcert.TLS(t, testALPN)
	return client
}

// testCtx is a hang guard, not a timing assertion.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listenUDP(t testing.TB) *net.UDPConn {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connCause returns the close error of one of our or quic-go's connections.
func connCause(c interface{ Context() context.Context }) error {
	return context.Cause(c.Context())
}

func afterMs(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// serveStreams accepts connections with accept until it fails (ctx ended or
// the listener closed) and runs handle in its own goroutine for every
// bidirectional stream each connection opens. It serves quic-go listeners
// as well as ours.
func serveStreams[S any, C interface {
	AcceptStream(context.Context) (S, error)
}](ctx context.Context, accept func(context.Context) (C, error), handle func(S)) {
	go func() {
		for {
			c, err := accept(ctx)
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := c.AcceptStream(ctx)
					if err != nil {
						return
					}
					go handle(s)
				}
			}()
		}
	}()
}

// echo copies what s reads back to it, then closes its send side.
func echo(s io.ReadWriteCloser) {
	_, _ = io.Copy(s, s)
	_ = s.Close()
}

// echoServer is an echo listener that records the connections it accepts.
type echoServer struct {
	tr   *Transport
	addr *net.UDPAddr
	// accepted has every connection accepted, in order (buffered: the
	// server does not wait for a reader).
	accepted chan *Conn

	mu    sync.Mutex
	conns []*Conn
}

// serveEcho listens on tr and echoes every stream of every connection
// until ctx ends or tr closes.
func serveEcho(t testing.TB, ctx context.Context, tr *Transport, conf *Config) *echoServer {
	t.Helper()
	ln, err := tr.Listen(serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{tr: tr, addr: ln.Addr().(*net.UDPAddr), accepted: make(chan *Conn, 64)}
	serveStreams(ctx, func(ctx context.Context) (*Conn, error) {
		c, err := ln.Accept(ctx)
		if err == nil {
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.accepted <- c
		}
		return c, err
	}, func(st *Stream) { echo(st) })
	return s
}

// only returns the one connection the server accepted.
func (s *echoServer) only(t testing.TB) *Conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("the server accepted %d connections, want 1", len(s.conns))
	}
	return s.conns[0]
}

// next waits for the next connection the server accepts.
func (s *echoServer) next(t testing.TB, ctx context.Context) *Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-ctx.Done():
		t.Fatal("the server accepted no connection")
		return nil
	}
}
