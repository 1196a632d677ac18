//go:build linux

package abuse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testutil"
)

// proxyUpstream is an application behind `serve --upstream`, started by
// the test: it counts its open connections (the most at once too) and
// its handlers in flight.
type proxyUpstream struct {
	url      string
	open     atomic.Int64
	maxOpen  atomic.Int64
	inFlight atomic.Int64
	received atomic.Int64 // request body bytes read by /slow-upload
}

// startProxyUpstream serves, on the loopback:
//   - /big: an endless response (the slow readers' download);
//   - /upload: the request body's SHA-256 in hex;
//   - /slow-upload: reads the request body to its end, then 200;
//   - /stall: never answers (until the request is canceled).
func startProxyUpstream(t *testing.T) *proxyUpstream {
	t.Helper()
	u := &proxyUpstream{}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if _, err := io.Copy(h, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
	})
	mux.HandleFunc("/slow-upload", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			u.received.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.inFlight.Add(1)
			defer u.inFlight.Add(-1)
			mux.ServeHTTP(w, r)
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				n := u.open.Add(1)
				for {
					m := u.maxOpen.Load()
					if n <= m || u.maxOpen.CompareAndSwap(m, n) {
						break
					}
				}
			case http.StateClosed, http.StateHijacked:
				u.open.Add(-1)
			}
		},
	}
	testutil.Serve(t, func() { srv.Serve(ln) }, func() { srv.Close() })
	u.url = "http://" + ln.Addr().String()
	return u
}

// TestProxyConcurrentUploads (issue 25): 8 clients upload 64 MiB each at
// once through `serve --upstream` over HTTP/3; every body reaches the
// upstream byte for byte (SHA-256), and the proxy's peak resident memory
// stays under 150 MB: bodies stream, flow control holding the clients.
func TestProxyConcurrentUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("512 MiB through the proxy")
	}
	const clients, size = 8, 64 << 20
	up := startProxyUpstream(t)
	s := startServer(t, "--upstream", up.url)
	ctx := ctxFor(t)
	tr := &http3.Transport{TLSClientConfig: s.clientTLS()}
	defer tr.Close()
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			body := io.LimitReader(rand.NewChaCha8([32]byte{byte(i)}), size)
			want := sha256.New()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"upload", io.TeeReader(body, want))
			rsp, err := tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			got, err := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			switch {
			case err != nil:
				errs <- err
			case rsp.StatusCode != http.StatusOK || string(got) != hex.EncodeToString(want.Sum(nil)):
				errs <- fmt.Errorf("upload %d: %d %q, want the body's SHA-256", i, rsp.StatusCode, got)
			default:
				errs <- nil
			}
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	peak := s.peakRSSMB()
	t.Logf("%d uploads of %d MiB through the proxy: peak RSS %.1f MB, %d upstream connections at most", clients, size>>20, peak, up.maxOpen.Load())
	if peak >= 150 {
		t.Errorf("peak RSS %.1f MB, want < 150 MB", peak)
	}
	checkNoPanics(t, s.scrape())
}

// TestProxySlowPeers (issue 25): slow readers of an endless download,
// slow uploaders and requests to a stalled upstream, all at once through
// `serve --upstream`. While they last, the proxy's memory, goroutines and
// upstream connections stay within a constant per request (the upstream
// is held back by TCP, the clients by QUIC flow control); the stalled
// requests get 504 at --upstream-timeout; once the clients go away,
// every upstream request is canceled and the goroutines are given back.
func TestProxySlowPeers(t *testing.T) {
	const (
		readerConns, readerStreams = 4, 50
		uploaders                  = 100
		stalls                     = 100
	)
	up := startProxyUpstream(t)
	s := startServer(t, "--upstream", up.url, "--upstream-timeout", "2s")
	ctx := ctxFor(t)
	baseRSS := s.rssMB()
	// The subtest's cleanups are the clients going away.
	t.Run("held", func(t *testing.T) {
		// Slow readers: response headers arrive, bodies are never read.
		slowReaders(ctx, t, s, readerConns, readerStreams, "big", false)

		// Slow uploaders: 1 KiB of a body, then nothing.
		tr := &http3.Transport{TLSClientConfig: s.clientTLS()}
		defer tr.Close()
		var pipes []*io.PipeWriter
		var wg sync.WaitGroup
		uploadErrs := make(chan error, uploaders)
		for range uploaders {
			pr, pw := io.Pipe()
			pipes = append(pipes, pw)
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"slow-upload", pr)
				rsp, err := tr.RoundTrip(req)
				if err == nil {
					// The proxy may answer the failed upload (499,
					// for its log) before the client noticed.
					rsp.Body.Close()
					if rsp.StatusCode < 400 {
						err = fmt.Errorf("slow upload answered %d before its body ended", rsp.StatusCode)
					}
				}
				uploadErrs <- err
			})
			go func() { _, _ = pw.Write(make([]byte, 1024)) }()
		}
		testutil.WaitFor(t, "the uploads' first KiB at the upstream", func() bool { return up.received.Load() >= uploaders*1024 })

		// A stalled upstream: each request is answered 504 at the timeout.
		stallClient := &http3.Transport{TLSClientConfig: s.clientTLS()}
		defer stallClient.Close()
		stallErrs := make(chan error, stalls)
		for range stalls {
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"stall", nil)
				rsp, err := stallClient.RoundTrip(req)
				if err == nil {
					rsp.Body.Close()
					if rsp.StatusCode != http.StatusGatewayTimeout {
						err = fmt.Errorf("stalled upstream: %d, want 504", rsp.StatusCode)
					}
				}
				stallErrs <- err
			}()
		}
		for range stalls {
			if err := <-stallErrs; err != nil {
				t.Error(err)
			}
		}
		held := readerConns*readerStreams + uploaders // requests in flight now
		// The stalled requests' upstream connections were closed at the
		// timeout, which ends their handlers.
		testutil.WaitFor(t, "the stalled requests' upstream handlers to end", func() bool { return up.inFlight.Load() == int64(held) })
		waitQuiet(t, s)
		m := s.scrape()
		rss := s.rssMB()
		t.Logf("%d slow readers and %d slow uploaders held, %d stalls answered: RSS %.1f MB (%.1f at start, peak %.1f), %.0f goroutines, upstream: %d connections open (%d at most), %d handlers",
			readerConns*readerStreams, uploaders, stalls, rss, baseRSS, s.peakRSSMB(), m[mGoroutines], up.open.Load(), up.maxOpen.Load(), up.inFlight.Load())
		if peak := s.peakRSSMB(); peak >= 150 {
			t.Errorf("peak RSS %.1f MB, want < 150 MB", peak)
		}
		if g := m[mGoroutines]; g > float64(6*held+200) {
			t.Errorf("%.0f goroutines for %d requests held, want a few per request", g, held)
		}
		// One upstream connection per request at most: those of the stalled
		// requests were closed at their timeout (or went back to the pool).
		if n, limit := up.maxOpen.Load(), int64(held+stalls); n > limit {
			t.Errorf("%d upstream connections at once, want at most one per request (%d)", n, limit)
		}

		// The uploaders give up.
		for _, pw := range pipes {
			pw.CloseWithError(errors.New("uploader gave up"))
		}
		wg.Wait()
		close(uploadErrs)
		for err := range uploadErrs {
			if err != nil && strings.Contains(err.Error(), "answered") {
				t.Errorf("slow upload: %v", err)
				break
			}
		}
	})
	// The slow readers went away with the subtest: every upstream
	// request ends.
	testutil.WaitFor(t, "every upstream request to end", func() bool { return up.inFlight.Load() == 0 })
	testutil.WaitFor(t, "the proxy's goroutines to be given back", func() bool { return s.scrape()[mGoroutines] < 100 })
	checkNoPanics(t, s.scrape())
}
