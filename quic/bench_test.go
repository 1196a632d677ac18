package quic

import (
	"context"
	"io"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// benchUpload measures one-way throughput: the client sends size bytes on a
// fresh stream per iteration and the server discards them.
func benchUpload(b *testing.B, addr string, size int) {
	ctx := context.Background()
	c, err := DialAddr(ctx, addr, clientTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	data := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Write(data); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		// The server answers with one byte once it read everything.
		if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// discardAndAck reads s to its end, then answers with one byte.
func discardAndAck(s io.ReadWriteCloser) {
	_, _ = io.Copy(io.Discard, s)
	_, _ = s.Write([]byte{1})
	_ = s.Close()
}

func discardServer(b *testing.B) string {
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ctx := context.Background()
	serveStreams(ctx, ln.Accept, func(s *Stream) { discardAndAck(s) })
	return ln.Addr().String()
}

func BenchmarkUpload4MBOursToOurs(b *testing.B) {
	benchUpload(b, discardServer(b), 4<<20)
}

func BenchmarkUpload4MBOursToQuicGo(b *testing.B) {
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(b), &quicgo.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ctx := context.Background()
	serveStreams(ctx, ln.Accept, func(s *quicgo.Stream) { discardAndAck(s) })
	benchUpload(b, ln.Addr().String(), 4<<20)
}

func BenchmarkHandshake(b *testing.B) {
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			_ = c.CloseWithError(0, "")
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.CloseWithError(0, "")
	}
}

// BenchmarkUpload4MBQuicGoToQuicGo is the baseline: quic-go on both sides.
func BenchmarkUpload4MBQuicGoToQuicGo(b *testing.B) {
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(b), &quicgo.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ctx := context.Background()
	serveStreams(ctx, ln.Accept, func(s *quicgo.Stream) { discardAndAck(s) })
	c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(b), &quicgo.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	data := make([]byte, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Write(data); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
			b.Fatal(err)
		}
	}
}
