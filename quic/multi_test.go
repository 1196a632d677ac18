package quic

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// TestManyConnections: concurrent clients, ours and quic-go's, on one
// server, each with its own data.
func TestManyConnections(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	const n = 20
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := testData(20_000+i, uint64(100+i))
			var s rwStream
			if i%2 == 0 {
				c, err := DialAddr(ctx, addr, clientTLS(t), nil)
				if err != nil {
					errc <- err
					return
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStreamSync(ctx); err != nil {
					errc <- err
					return
				}
			} else {
				c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
				if err != nil {
					errc <- err
					return
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStreamSync(ctx); err != nil {
					errc <- err
					return
				}
			}
			go func() {
				_, _ = s.Write(msg)
				_ = s.Close()
			}()
			got, err := io.ReadAll(s)
			if err != nil {
				errc <- err
				return
			}
			if !bytes.Equal(got, msg) {
				errc <- fmt.Errorf("client %d: echo mismatch", i)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestManyUniStreamsFromQuicGo: quic-go opens more unidirectional streams
// than our limit allows at once; MAX_STREAMS must keep it going.
func TestManyUniStreamsFromQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	const n = 300 // our limit is 100 at a time
	go func() {
		for i := range n {
			s, err := sc.OpenUniStreamSync(ctx)
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(s, "uni %d", i)
			_ = s.Close()
		}
	}()
	seen := make(map[string]bool)
	for range n {
		s, err := c.AcceptUniStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(b)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages, want %d", len(seen), n)
	}
}

func TestStreamAPIEdges(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("y")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case <-s.Context().Done():
	default:
		t.Fatal("stream context not canceled after Close")
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "x" {
		t.Fatalf("got %q, %v", got, err)
	}
	if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF: %d, %v", n, err)
	}
	s.CancelWrite(1) // after Close and FIN: no effect
	s.CancelRead(2)  // after EOF: no effect
	if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF and CancelRead: %d, %v", n, err)
	}
	// After the connection closed, everything fails with its error.
	_ = c.CloseWithError(5, "")
	if _, err := c.OpenStream(); err == nil {
		t.Fatal("OpenStream on a closed connection succeeded")
	}
	if err := c.SendDatagram([]byte("x")); err == nil {
		t.Fatal("SendDatagram on a closed connection succeeded")
	}
}
