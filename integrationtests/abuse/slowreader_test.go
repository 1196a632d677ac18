//go:build linux

package abuse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testutil"
)

// slowReadWindow is the slow readers' stream receive window.
const slowReadWindow = 16 << 10

// slowReaders opens conns connections with quic-go's HTTP/3 client (an
// independent stack), each with streams GETs of path under a 16 KiB
// stream window and keep-alives on, and never reads a body. It returns
// once every response header arrived; cleanup closes everything. With
// stallResets (a server with a short write-stall timeout), a request
// whose stream the server reset as stalled (H3_REQUEST_CANCELLED) before
// the client read its header counts as a stalled reader too: a loaded
// machine may take that long to parse it. It returns how many did.
func slowReaders(ctx context.Context, t *testing.T, s *server, conns, streams int, path string, stallResets bool) (reset int) {
	t.Helper()
	qconf := &quicgo.Config{
		InitialStreamReceiveWindow:     slowReadWindow,
		MaxStreamReceiveWindow:         slowReadWindow,
		InitialConnectionReceiveWindow: uint64(streams * slowReadWindow * 2),
		MaxConnectionReceiveWindow:     uint64(streams * slowReadWindow * 2),
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
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
				resp, err := tr.RoundTrip(req)
				mu.Lock()
				defer mu.Unlock()
				if serr, ok := errors.AsType[*quicgo.StreamError](err); ok && stallResets && serr.Remote && http3.ErrCode(serr.ErrorCode) == http3.ErrCodeRequestCanceled {
					reset++
					return
				}
				if err != nil {
					errs = append(errs, err)
					return
				}
				resps = append(resps, resp)
				if resp.StatusCode != http.StatusOK {
					errs = append(errs, fmt.Errorf("GET %s: %d", path, resp.StatusCode))
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d slow-reader requests failed, first: %v", len(errs), conns*streams, errs[0])
	}
	return reset
}

// TestSlowReaders is issue 11's second attack: 20 connections x 100
// streams (the server's stream limit per connection) each GET a 200 MB
// file with a 16 KiB stream receive window and never read, with the
// client's keep-alives on, so no idle timeout ends them. Once the server
// is quiet (everything it could send was sent), its resident memory must
// stay under 300 MB (issue 11: 2.1 GB, 1.1 MiB per stream), its goroutines
// and open files within a small constant per stream, and a benign fetch
// must complete. TestSlowReadersStalled shows the write-stall timeout
// ending such streams.
func TestSlowReaders(t *testing.T) {
	const (
		conns   = 20
		streams = 100
		window  = slowReadWindow
	)
	root, hello := siteWithBigFile(t, 200<<20)
	s := startServer(t, "--root", root)
	ctx := ctxFor(t)
	baseFDs, baseRSS := s.fds(), s.rssMB()
	slowReaders(ctx, t, s, conns, streams, "big.bin", false)
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

// TestSlowReadersStalled: the write-stall timeout (--write-stall-timeout,
// 60 s by default; 2 s here) ends slow readers' streams although keep-
// alives hold their connections: every response write fails, its stream
// is reset (H3_REQUEST_CANCELLED) and counted as write_stall, and the
// server gives back each stream's goroutine, open file and buffers while
// the connections stay.
func TestSlowReadersStalled(t *testing.T) {
	t.Parallel()
	const conns, streams = 2, 100
	root, hello := siteWithBigFile(t, 200<<20)
	s := startServer(t, "--root", root, "--write-stall-timeout", "2s")
	ctx := ctxFor(t)
	baseFDs := s.fds()
	early := slowReaders(ctx, t, s, conns, streams, "big.bin", true)
	stalled := series(mH3Refused, "reason", "write_stall")
	var m map[string]float64
	testutil.WaitFor(t, "the write-stall timeout to end every stream", func() bool {
		m = s.scrape()
		return m[stalled] >= conns*streams && m["turboretry_http3_requests_active"] == 0
	})
	fds := s.fds()
	t.Logf("after the stall timeout: %.0f streams reset as stalled (%d before the client read the response header), %.0f live connections, %.0f goroutines, %d fds (%d at start), %.0f bytes buffered for sending",
		m[stalled], early, m[mConns], m[mGoroutines], fds, baseFDs, m[mSendBuffered])
	if m[stalled] != conns*streams {
		t.Errorf("%.0f streams counted as write_stall, want %d", m[stalled], conns*streams)
	}
	if m[mConns] < conns {
		t.Errorf("%.0f live connections, want the attack's %d still open", m[mConns], conns)
	}
	if fds > baseFDs+8 {
		t.Errorf("%d fds open after every stream ended (%d at start)", fds, baseFDs)
	}
	if g := m[mGoroutines]; g > 100 {
		t.Errorf("%.0f goroutines after every stream ended, want a handful per connection", g)
	}
	checkBenign(t, benignFetches(ctx, s, "hello.txt", hello))
	checkNoPanics(t, s.scrape())
}
