package http3

import (
	"context"
	"crypto/tls"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// declaredHeadersAttack opens conns connections with streams request
// streams each; every stream sends the header of a HEADERS frame that
// declares declared bytes, then sent bytes of it, and nothing more. It
// returns the streams; the connections close at the end of the test.
func declaredHeadersAttack(t testing.TB, addr string, clientTLS *tls.Config, conns, streams int, declared uint64, sent int) []*quic.Stream {
	t.Helper()
	frame := append(appendFrameHeader(nil, frameTypeHeaders, declared), make([]byte, sent)...)
	var all []*quic.Stream
	for range conns {
		qc, err := quic.DialAddr(context.Background(), addr, clientTLS, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { qc.CloseWithError(0, "") })
		for range streams {
			s, err := qc.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(frame); err != nil {
				t.Fatal(err)
			}
			all = append(all, s)
		}
	}
	return all
}

// benignFetches checks that our client and quic-go's both get /hello.
func benignFetches(t *testing.T, addr string, clientTLS *tls.Config) {
	t.Helper()
	stillServes(t, addr, clientTLS)
	c, _ := quicGoClient(t, clientTLS)
	rsp, err := c.Get("https://" + addr + "/hello")
	if err != nil {
		t.Fatalf("quic-go client during the attack: %v", err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("quic-go client during the attack: status %d", rsp.StatusCode)
	}
}

// TestDeclaredHeadersStayBounded is issue 11's declared-1-MiB HEADERS
// attack: 8 connections x 100 streams, each declaring a 1 MiB HEADERS
// frame and sending 500 bytes of it. Before, each stream allocated the
// declared 1 MiB (800 MiB here); now a stream's buffer follows what
// arrived and each connection admits at most MaxConnHeaderBytes of
// declared sections at a time, the rest waiting without a buffer. The
// server must stay within a small heap and goroutine bound while benign
// clients (ours and quic-go's) are served.
func TestDeclaredHeadersStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("400 streams; skipped in -short")
	}
	checkGoroutines(t)
	const conns, streams, declared, sent = 8, 100, 1 << 20, 500
	s, addr, clientTLS := startServer(t, testHandler(), func(s *Server) {
		s.ReadHeaderTimeout = time.Minute // the attack is measured while it holds
	})
	stillServes(t, addr, clientTLS) // warm up: pools, TLS
	heap0, goroutines0 := heapInUse(), runtime.NumGoroutine()

	declaredHeadersAttack(t, addr, clientTLS, conns, streams, declared, sent)
	budget := s.maxConnHeaderBytes()
	testutil.WaitFor(t, "the server to take every stream and fill the budgets", func() bool {
		st := s.Stats()
		return st.RequestsActive == conns*streams && uint64(st.HeaderBytesReserved) == conns*budget
	})
	heap := heapInUse() - heap0
	goroutines := runtime.NumGoroutine() - goroutines0
	t.Logf("%d x %d streams declaring %d bytes: heap +%d KiB (%d bytes per stream, both ends), goroutines +%d",
		conns, streams, declared, heap>>10, heap/(conns*streams), goroutines)
	// A quarter of what the old reader allocated for one connection (100 MiB).
	if limit := uint64(streams * declared / 4); heap > limit {
		t.Errorf("heap grew by %d bytes, want under %d", heap, limit)
	}
	if limit := conns*streams + 16*conns; goroutines > limit {
		t.Errorf("%d more goroutines, want at most %d", goroutines, limit)
	}
	benignFetches(t, addr, clientTLS)
}

// TestHeaderBudgetRefusals: while a request's trailer section holds the
// connection's whole header budget, new request streams wait for it and
// are refused with H3_REQUEST_REJECTED (the client may retry them) once
// ReadHeaderTimeout passes, and counted; when the holder goes away the
// budget is free again.
func TestHeaderBudgetRefusals(t *testing.T) {
	checkGoroutines(t)
	const waiting = 3
	s, addr, clientTLS := startServer(t, testHandler(), func(s *Server) {
		s.ReadHeaderTimeout = time.Second // the holder's own request section must be read within it
		s.MaxHeaderBytes = 4 << 10
		s.MaxConnHeaderBytes = 4 << 10
	})
	c := dialRaw(t, addr, clientTLS)
	c.control()
	holder, err := c.qc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	holder.Write(concat(requestSection(t, echoRequest...), dataFrame{Length: 1}.append(nil), []byte("x"),
		appendFrameHeader(nil, frameTypeHeaders, 4<<10), make([]byte, 100)))
	testutil.WaitFor(t, "the trailer section to take the budget", func() bool { return s.Stats().HeaderBytesReserved == 4<<10 })

	var streams []*quic.Stream
	for range waiting {
		str, err := c.qc.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		str.Write(requestSection(t, goodRequest...))
		streams = append(streams, str)
	}
	for _, str := range streams {
		wantStreamReset(t, str, ErrCodeRequestRejected)
	}
	if n := s.Stats().Refused[RefusedHeaderBudget]; n != waiting {
		t.Fatalf("header_budget counted %d times, want %d", n, waiting)
	}
	holder.CancelWrite(quic.StreamErrorCode(ErrCodeRequestCanceled))
	testutil.WaitFor(t, "the holder to release the budget", func() bool { return s.Stats().HeaderBytesReserved == 0 })
	c.helloOn()
}

// BenchmarkDeclaredHeadersMemory measures the heap that streams holding
// an incomplete declared-1-MiB HEADERS frame cost (both ends, in one
// process), against our Server and against a bare QUIC listener that
// accepts the same streams and reads nothing: the difference is what
// the HTTP/3 layer adds per stream. docs/http3.md has the figures:
//
//	go test -run '^$' -bench BenchmarkDeclaredHeadersMemory -benchtime 1x ./http3/
func BenchmarkDeclaredHeadersMemory(b *testing.B) {
	const conns, streams, declared, sent = 4, 100, 1 << 20, 500
	for _, mode := range []string{"http3", "quic-only"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				var addr string
				var clientTLS *tls.Config
				var ready func() bool
				if mode == "http3" {
					var s *Server
					s, addr, clientTLS = startServer(b, testHandler(), func(s *Server) { s.ReadHeaderTimeout = time.Minute })
					ready = func() bool { return s.Stats().RequestsActive == conns*streams }
				} else {
					var accepted func() int
					addr, clientTLS, accepted = startHoldingListener(b)
					ready = func() bool { return accepted() == conns*streams }
				}
				heap0 := heapInUse()
				declaredHeadersAttack(b, addr, clientTLS, conns, streams, declared, sent)
				testutil.WaitFor(b, "every stream", ready)
				heap := heapInUse() - heap0
				b.ReportMetric(float64(heap)/(conns*streams), "B/stream")
			}
		})
	}
}

// startHoldingListener runs a QUIC listener (no HTTP/3) that accepts
// every bidirectional stream and holds it without reading.
func startHoldingListener(t testing.TB) (addr string, clientTLS *tls.Config, accepted func() int) {
	serverTLS, clientTLS := testCert(t)
	ln, err := quic.ListenAddr("127.0.0.1:0", ConfigureTLSConfig(serverTLS), &quic.Config{MaxIncomingStreams: 200})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []*quic.Stream
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					str, err := qc.AcceptStream(context.Background())
					if err != nil {
						return
					}
					mu.Lock()
					held = append(held, str)
					mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), clientTLS, func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(held)
	}
}
