package quic

import (
	"context"
	"crypto/tls"
	"io"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// The benchmarks here complete the ours-vs-quic-go pairs of bench_test.go
// (docs/performance.md, "QUIC transport vs quic-go"): each quic-go
// benchmark mirrors its ours counterpart step for step, with the same
// certificate, ALPN, loopback address and default configs, so that the
// ratio of the two measures the stacks and not the harness.

// BenchmarkHandshakeQuicGo is BenchmarkHandshake with quic-go on both sides:
// a fresh client (own UDP socket) per iteration, full 1-RTT handshake
// without Retry or resumption, both ends closed right away.
func BenchmarkHandshakeQuicGo(b *testing.B) {
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(b), nil)
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
		c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.CloseWithError(0, "")
	}
}

// handshakeParams is what must match between the two stacks' handshakes
// for the handshakes-per-second ratio to be fair.
type handshakeParams struct {
	version uint16
	suite   uint16
	curve   tls.CurveID
	alpn    string
	resumed bool
}

func paramsOf(s tls.ConnectionState) handshakeParams {
	return handshakeParams{s.Version, s.CipherSuite, s.CurveID, s.NegotiatedProtocol, s.DidResume}
}

// TestHandshakeBenchParity checks that the two handshake benchmarks do the
// same cryptographic work: same TLS version, cipher suite, key exchange
// group and ALPN, and no resumption on either side.
func TestHandshakeBenchParity(t *testing.T) {
	ctx := testCtx(t)

	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(ctx); err == nil {
			<-c.Context().Done()
		}
	}()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ours := paramsOf(c.ConnectionState().TLS)
	_ = c.CloseWithError(0, "")

	qln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qln.Close()
	go func() {
		if c, err := qln.Accept(ctx); err == nil {
			<-c.Context().Done()
		}
	}()
	qc, err := quicgo.DialAddr(ctx, qln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := paramsOf(qc.ConnectionState().TLS)
	_ = qc.CloseWithError(0, "")

	if ours != theirs {
		t.Fatalf("handshakes differ: ours %+v, quic-go %+v", ours, theirs)
	}
	if ours.alpn != testALPN || ours.resumed || ours.version != tls.VersionTLS13 {
		t.Fatalf("unexpected handshake parameters %+v", ours)
	}
	t.Logf("both stacks: TLS 1.3, suite %s, group %s, ALPN %q",
		tls.CipherSuiteName(ours.suite), ours.curve, ours.alpn)
}

// serveDownload answers every stream that accept returns: it reads the
// request up to its FIN, then writes payload and a FIN. Reading to io.EOF
// matters: a stream whose FIN the application never reads stays open, and
// the peer runs out of stream credit after 100 requests.
func serveDownload(accept func(context.Context) (io.ReadWriteCloser, error), payload []byte) {
	ctx := context.Background()
	for {
		s, err := accept(ctx)
		if err != nil {
			return
		}
		go func() {
			if _, err := io.Copy(io.Discard, s); err != nil {
				return
			}
			_, _ = s.Write(payload)
			_ = s.Close()
		}()
	}
}

// benchDownload measures the server-to-client direction: per iteration the
// client opens a fresh stream, sends a one-byte request and reads size
// bytes until the FIN. It is benchUpload turned around.
func benchDownload(b *testing.B, open func(context.Context) (io.ReadWriteCloser, error), size int) {
	ctx := context.Background()
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := open(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Write([]byte{1}); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{s}, buf)
		if err != nil {
			b.Fatal(err)
		}
		if n != int64(size) {
			b.Fatalf("read %d bytes, want %d", n, size)
		}
	}
}

func BenchmarkDownload4MBOursToOurs(b *testing.B) {
	const size = 4 << 20
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		serveDownload(func(ctx context.Context) (io.ReadWriteCloser, error) {
			return c.AcceptStream(ctx)
		}, make([]byte, size))
	}()
	c, err := DialAddr(context.Background(), ln.Addr().String(), clientTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	benchDownload(b, func(ctx context.Context) (io.ReadWriteCloser, error) {
		return c.OpenStreamSync(ctx)
	}, size)
}

func BenchmarkDownload4MBQuicGoToQuicGo(b *testing.B) {
	const size = 4 << 20
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		serveDownload(func(ctx context.Context) (io.ReadWriteCloser, error) {
			return c.AcceptStream(ctx)
		}, make([]byte, size))
	}()
	c, err := quicgo.DialAddr(context.Background(), ln.Addr().String(), clientTLS(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	benchDownload(b, func(ctx context.Context) (io.ReadWriteCloser, error) {
		return c.OpenStreamSync(ctx)
	}, size)
}
