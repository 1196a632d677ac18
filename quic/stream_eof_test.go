package quic

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// exactReadServer starts our listener whose handler reads exactly reqLen
// bytes with io.ReadFull, answers with the same bytes, and never calls Read
// again: the stream must still complete so the peer gets its credit back.
func exactReadServer(t *testing.T, ctx context.Context, reqLen int) string {
	t.Helper()
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{MaxIncomingStreams: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serveStreams(ctx, ln.Accept, func(s *Stream) {
		buf := make([]byte, reqLen)
		if _, err := io.ReadFull(s, buf); err != nil {
			s.CancelWrite(1)
			return
		}
		_, _ = s.Write(buf)
		_ = s.Close()
	})
	return ln.Addr().String()
}

// TestReadFullReleasesStreamCredit runs 300 request/response streams, three
// times the server's stream limit, where both sides read exactly the
// expected length and never read again. Without io.EOF on the last read the
// server never frees its streams and the client blocks after 100.
func TestReadFullReleasesStreamCredit(t *testing.T) {
	const reqLen, streams = 700, 300
	for _, client := range []string{"ours", "quic-go"} {
		t.Run(client, func(t *testing.T) {
			// A hang guard shorter than testCtx, so a regression fails fast.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			addr := exactReadServer(t, ctx, reqLen)
			var open func(context.Context) (rwStream, error)
			if client == "ours" {
				c, err := DialAddr(ctx, addr, clientTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				open = func(ctx context.Context) (rwStream, error) { return c.OpenStreamSync(ctx) }
			} else {
				c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				open = func(ctx context.Context) (rwStream, error) { return c.OpenStreamSync(ctx) }
			}
			for i := range streams {
				s, err := open(ctx)
				if err != nil {
					t.Fatalf("opening stream %d: %v", i, err)
				}
				req := testData(reqLen, uint64(i))
				if _, err := s.Write(req); err != nil {
					t.Fatalf("stream %d: write: %v", i, err)
				}
				_ = s.Close()
				got := make([]byte, reqLen)
				if _, err := io.ReadFull(s, got); err != nil {
					t.Fatalf("stream %d: read: %v", i, err)
				}
				if !bytes.Equal(got, req) {
					t.Fatalf("stream %d: response differs", i)
				}
			}
		})
	}
}

// TestReadReturnsEOFWithLastBytes checks the io.EOF rides on the read that
// reaches the final size when the FIN is already known.
func TestReadReturnsEOFWithLastBytes(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello, final bytes")
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Wait until the echo and its FIN are all buffered, through the
	// internal state, then read with a large enough buffer.
	st := s.s
	for {
		c.mu.Lock()
		_, fin := st.fcRecv.FinalSize()
		have := uint64(st.recv.Readable())
		c.mu.Unlock()
		if fin && have == uint64(len(msg)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("echo never arrived")
		case <-time.After(time.Millisecond):
		}
	}
	buf := make([]byte, 100)
	n, err := s.Read(buf)
	if n != len(msg) || err != io.EOF {
		t.Fatalf("Read = %d, %v; want %d, io.EOF", n, err, len(msg))
	}
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("second Read = %d, %v; want 0, io.EOF", n, err)
	}
}
