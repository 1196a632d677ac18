package quic

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// connectedPair returns a client connection of ours and the server's side,
// with conf on both.
func connectedPair(t *testing.T, conf *Config) (client, server *Conn) {
	t.Helper()
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err = DialAddr(ctx, ln.Addr().String(), clientTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.CloseWithError(0, "") })
	if server, err = ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.CloseWithError(0, "") })
	return client, server
}

// Peek copies stream data without consuming it, waits for what it asks
// for, and reports io.EOF when the stream ends first.
func TestStreamPeek(t *testing.T) {
	ctx := testCtx(t)
	client, server := connectedPair(t, nil)
	s, err := client.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	ss, err := server.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var peeked []byte
	var peekErr error
	go func() {
		defer close(done)
		b := make([]byte, 8) // more than the first write: waits for the second
		n, err := ss.Peek(b)
		peeked, peekErr = b[:n], err
	}()
	if _, err := s.Write([]byte(" world")); err != nil {
		t.Fatal(err)
	}
	<-done
	if peekErr != nil || string(peeked) != "hello wo" {
		t.Fatalf("Peek: %q, %v", peeked, peekErr)
	}
	_ = s.Close()
	b := make([]byte, 20)
	n, err := ss.Peek(b)
	if !errors.Is(err, io.EOF) || string(b[:n]) != "hello world" {
		t.Fatalf("Peek past the end: %q, %v", b[:n], err)
	}
	all, err := io.ReadAll(ss)
	if err != nil || string(all) != "hello world" {
		t.Fatalf("Read after Peek: %q, %v", all, err)
	}
}

// WriteWithLimit queues only what its limiter grants, frame by frame, and
// stops at a short grant with ErrWriteLimitReached; TryWriteAll queues all
// or nothing. quic-go's server reads exactly the granted bytes.
func TestWriteWithLimitAndTryWriteAll(t *testing.T) {
	ctx := testCtx(t)
	c, qs := dialQuicGoServer(t)
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 5000)
	var offered atomic.Int64
	n, err := s.WriteWithLimit(data, func(max int) int {
		if offered.Add(int64(max)) > 3000 {
			return min(max, 100) // the budget runs out
		}
		return max
	})
	if !errors.Is(err, ErrWriteLimitReached) || n <= 0 || n >= len(data) {
		t.Fatalf("WriteWithLimit: %d, %v", n, err)
	}
	if m, err := s.WriteWithLimit(data[n:n+10], func(max int) int { return max }); err != nil || m != 10 {
		t.Fatalf("second WriteWithLimit: %d, %v", m, err)
	}
	if err := s.TryWriteAll([]byte("tail")); err != nil {
		t.Fatalf("TryWriteAll within the window: %v", err)
	}
	if err := s.TryWriteAll(make([]byte, 2<<20)); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryWriteAll beyond the window: %v", err)
	}
	_ = s.Close()
	qstr, err := qs.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(qstr)
	if want := append(append([]byte(nil), data[:n+10]...), "tail"...); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("quic-go read %d bytes (%v), want %d", len(got), err, len(want))
	}
	if err := s.TryWriteAll([]byte("x")); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("TryWriteAll after Close: %v", err)
	}
}

// The final-size callback fires once, with the size from the FIN, whether
// set before or after the FIN arrived.
func TestReceiveFinalSizeCallback(t *testing.T) {
	ctx := testCtx(t)
	client, server := connectedPair(t, nil)
	for _, before := range []bool{true, false} {
		s, err := client.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(make([]byte, 1234)); err != nil {
			t.Fatal(err)
		}
		rs, err := server.AcceptUniStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sizes := make(chan int64, 2)
		if before {
			rs.SetReceiveFinalSizeCallback(func(n int64) { sizes <- n })
		}
		_ = s.Close()
		if _, err := io.ReadAll(rs); err != nil {
			t.Fatal(err)
		}
		if !before {
			rs.SetReceiveFinalSizeCallback(func(n int64) { sizes <- n })
		}
		if n := <-sizes; n != 1234 {
			t.Fatalf("final size %d", n)
		}
		select {
		case n := <-sizes:
			t.Fatalf("called twice (%d)", n)
		default:
		}
	}
}

// AllowConnectionWindowIncrease is asked before the connection window
// grows; refusing keeps MAX_DATA at the initial window, which quic-go's
// sender respects, and the transfer still completes.
func TestAllowConnectionWindowIncrease(t *testing.T) {
	ctx := testCtx(t)
	var asked atomic.Int64
	conf := &Config{
		InitialConnectionReceiveWindow: 64 << 10,
		InitialStreamReceiveWindow:     64 << 10,
		AllowConnectionWindowIncrease:  func(_ *Conn, delta uint64) bool { asked.Add(1); return false },
	}
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	qc, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := qc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	go func() {
		_, _ = qs.Write(make([]byte, size))
		_ = qs.Close()
	}()
	ss, err := sc.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, ss)
	if err != nil || n != size {
		t.Fatalf("read %d, %v", n, err)
	}
	sc.mu.Lock()
	window := sc.flow.recv.Window()
	sc.mu.Unlock()
	if asked.Load() == 0 || window != 64<<10 {
		t.Fatalf("asked %d times, connection window %d", asked.Load(), window)
	}
}
