//go:build linux

package abuse

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// TestSlowReaders is issue 11's second attack: 20 connections x 100
// streams (the server's stream limit per connection) each GET a 200 MB
// file with a 16 KiB stream receive window and never read, with the
// client's keep-alives on, so no idle timeout ends them. quic-go's HTTP/3
// client is the attacker (an independent stack). Once the server is quiet
// (everything it could send was sent), its resident memory must stay under
// 300 MB (issue 11: 2.1 GB, 1.1 MiB per stream), its goroutines and open
// files within a small constant per stream, and a benign fetch must
// complete.
//
// The streams are not held until WriteStallTimeout (60 s) ends them: that
// is the http3 package's TestWriteStallTimeout.
func TestSlowReaders(t *testing.T) {
	const (
		conns   = 20
		streams = 100
		window  = 16 << 10
	)
	root, hello := siteWithBigFile(t, 200<<20)
	s := startServer(t, "--root", root)
	ctx := ctxFor(t)
	baseFDs, baseRSS := s.fds(), s.rssMB()

	qconf := &quicgo.Config{
		InitialStreamReceiveWindow:     window,
		MaxStreamReceiveWindow:         window,
		InitialConnectionReceiveWindow: streams * window * 2,
		MaxConnectionReceiveWindow:     streams * window * 2,
		KeepAlivePeriod:                5 * time.Second,
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		resps  []*http.Response
		errs   []error
		client []*quicgohttp3.Transport
	)
	t.Cleanup(func() {
		for _, r := range resps {
			r.Body.Close()
		}
		for _, c := range client {
			c.Close()
		}
	})
	for range conns {
		tr := &quicgohttp3.Transport{TLSClientConfig: s.clientTLS(), QUICConfig: qconf}
		client = append(client, tr)
		for range streams {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"big.bin", nil)
				resp, err := tr.RoundTrip(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				resps = append(resps, resp)
				if resp.StatusCode != http.StatusOK {
					errs = append(errs, fmt.Errorf("GET big.bin: %d", resp.StatusCode))
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d slow-reader requests failed, first: %v", len(errs), conns*streams, errs[0])
	}
	waitQuiet(t, s)

	metrics := s.scrape()
	fds, rss := s.fds(), s.rssMB()
	checkBenign(t, benignFetches(ctx, s, "hello.txt", hello))
	peakRSS := s.peakRSSMB()
	n := conns * streams
	t.Logf("%d slow-reader streams held: RSS %.1f MB (peak %.1f, %.1f at start: %.1f KiB per stream), %.0f live connections, %.0f goroutines, %d fds (%d at start), %.1f MiB of stream data buffered for sending",
		n, rss, peakRSS, baseRSS, (peakRSS-baseRSS)*1024/float64(n), metrics[mConns], metrics[mGoroutines], fds, baseFDs, metrics[mSendBuffered]/(1<<20))

	if peakRSS >= 300 {
		t.Errorf("peak RSS %.1f MB, want < 300 MB", peakRSS)
	}
	// Each stream holds its handler, which holds the file open; nothing
	// else may grow per stream.
	if fds > baseFDs+n+64 {
		t.Errorf("%d fds open (%d at start) for %d streams, want at most one per stream", fds, baseFDs, n)
	}
	if g := metrics[mGoroutines]; g > float64(2*n+400) {
		t.Errorf("%.0f goroutines for %d streams, want at most two per stream (and a few hundred more)", g, n)
	}
	// A writer queues what the peer's window allows plus one 16 KiB
	// chunk (docs/api.md, "Limits and memory budgets").
	if b, limit := metrics[mSendBuffered], float64(n*(window+16<<10)); b > limit {
		t.Errorf("%.0f bytes buffered for sending, want at most %.0f (window + 16 KiB per stream)", b, limit)
	}
	if metrics[mConns] < conns {
		t.Errorf("%.0f live connections, want the attack's %d", metrics[mConns], conns)
	}
	checkNoPanics(t, metrics)
}
