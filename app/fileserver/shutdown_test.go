package fileserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// bigFile writes a file large enough that its response cannot fit in the
// socket buffers, so that a client that stops reading keeps it in flight.
func bigFile(t *testing.T) (root string, content []byte) {
	root = t.TempDir()
	content = make([]byte, 32<<20)
	rand.Read(content)
	if err := os.WriteFile(filepath.Join(root, "big.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, content
}

func TestGracefulShutdownCompletesInFlight(t *testing.T) {
	root, content := bigFile(t)
	for _, proto := range []string{"h2", "h1"} {
		t.Run(proto, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ts := startServer(t, func(c *Config) { c.Root = root })
			h2, h1 := ts.clients(t)
			c := h2
			if proto == "h1" {
				c = h1
			}
			resp, err := c.Get(ts.URL() + "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatal(err)
			}
			ts.cancel()
			// Shutdown has begun once the listener refuses connections.
			eventually(t, func() error {
				conn, err := net.Dial("tcp", ts.Addr().String())
				if err == nil {
					conn.Close()
					return errors.New("still accepting")
				}
				return nil
			})
			rest, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("in-flight response cut: %v", err)
			}
			if !bytes.Equal(append(head, rest...), content) {
				t.Fatalf("in-flight response differs (%d bytes)", len(head)+len(rest))
			}
			if err := ts.stop(t); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			c.CloseIdleConnections()
			// No goroutine left behind: the count returns to where it was
			// (a little slack for runtime and testing goroutines).
			eventually(t, func() error {
				if n := runtime.NumGoroutine(); n > before+2 {
					return errorf("%d goroutines, %d before", n, before)
				}
				return nil
			})
		})
	}
}

func TestShutdownTimeoutClosesStuckRequests(t *testing.T) {
	root, _ := bigFile(t)
	ts := startServer(t, func(c *Config) {
		c.Root = root
		c.ShutdownTimeout = time.Millisecond
	})
	_, h1 := ts.clients(t)
	resp, err := h1.Get(ts.URL() + "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The client never reads on: the handler is stuck in a write.
	if err := ts.stop(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !bytes.Contains([]byte(ts.logs.String()), []byte("shutdown timeout reached")) {
		t.Error("forced close not logged")
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the stuck response completed although its connection was closed")
	}
}

// fakeListener is an ExtraListener that records its calls.
type fakeListener struct {
	ignoreCtx bool  // keep serving after ctx ends, until Close
	fail      error // return this at once
	closed    chan struct{}
	cancelled atomic.Bool
	closes    atomic.Int32
}

func newFake() *fakeListener { return &fakeListener{closed: make(chan struct{})} }

func (f *fakeListener) Serve(ctx context.Context) error {
	if f.fail != nil {
		return f.fail
	}
	if f.ignoreCtx {
		<-f.closed
		return nil
	}
	select {
	case <-ctx.Done():
	case <-f.closed:
	}
	// Both may be ready when Serve starts late (select picks at random):
	// what counts is whether ctx was cancelled by the time it returns.
	f.cancelled.Store(ctx.Err() != nil)
	return nil
}

func (f *fakeListener) Close() error {
	if f.closes.Add(1) == 1 {
		close(f.closed)
	}
	return nil
}

func TestExtraListeners(t *testing.T) {
	polite, stubborn := newFake(), newFake()
	stubborn.ignoreCtx = true
	s, _ := newServer(t, func(c *Config) { c.ShutdownTimeout = time.Millisecond })
	if err := s.AddListener(polite); err != nil {
		t.Fatal(err)
	}
	if err := s.AddListener(stubborn); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !polite.cancelled.Load() {
		t.Error("Serve's context was not cancelled for the polite listener")
	}
	if stubborn.closes.Load() != 1 {
		t.Errorf("stubborn listener closed %d times, want 1", stubborn.closes.Load())
	}
	if err := s.AddListener(newFake()); err == nil {
		t.Error("AddListener after Serve succeeded")
	}
	if err := s.Serve(context.Background()); err == nil {
		t.Error("second Serve succeeded")
	}
}

func TestFailingExtraListenerStopsServer(t *testing.T) {
	boom := errors.New("udp bind failed")
	bad := newFake()
	bad.fail = boom
	s, _ := newServer(t, nil)
	s.AddListener(bad)
	if err := s.Serve(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Serve: %v, want %v", err, boom)
	}
	// The TCP listener went down with it.
	if conn, err := net.Dial("tcp", s.Addr().String()); err == nil {
		conn.Close()
		t.Error("TCP listener still open")
	}
}

func TestCloseStopsServe(t *testing.T) {
	s, _ := newServer(t, nil)
	x := newFake()
	s.AddListener(x)
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	// Wait until Serve runs (a TLS handshake needs its accept loop), then
	// Close from outside.
	eventually(t, func() error {
		conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		conn.Close()
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	if x.closes.Load() == 0 {
		t.Error("extra listener not closed")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
