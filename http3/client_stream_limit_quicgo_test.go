package http3

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// startQuicGoServerLimited runs quic-go's HTTP/3 server allowing only
// maxStreams concurrent request streams per connection.
func startQuicGoServerLimited(t *testing.T, h http.Handler, maxStreams int64) (string, *tls.Config) {
	t.Helper()
	return startQuicGoServerConf(t, h, &quicgo.Config{MaxIncomingStreams: maxStreams})
}

// TestClientRecyclesQuicGoStreamCredit sends many more concurrent requests
// on one connection than quic-go's server allows streams. Each request
// must wait for stream credit (not fail with a stream-limit error), and
// every finished request must give its credit back: quic-go only issues
// MAX_STREAMS once both halves of a stream are done (its FIN acknowledged,
// our FIN read), so a client that leaves streams half-open, or misses the
// MAX_STREAMS wake-up, stalls here and the deadline turns that into an
// error instead of a hang.
func TestClientRecyclesQuicGoStreamCredit(t *testing.T) {
	const limit, workers, perWorker = 4, 16, 25
	var served atomic.Int64
	var mu sync.Mutex
	peers := map[string]bool{} // one client connection means one address
	addr, clientTLS := startQuicGoServerLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = w.Write(make([]byte, 1<<10))
	}), limit)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	// A hang guard, far above the run time; the test asserts counts only.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	var failed atomic.Int64
	for range workers {
		wg.Go(func() {
			for range perWorker {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
				if err != nil {
					t.Error(err)
					return
				}
				rsp, err := c.Do(req)
				if err != nil {
					failed.Add(1)
					t.Error(err)
					return
				}
				n, err := io.Copy(io.Discard, rsp.Body)
				rsp.Body.Close()
				if err != nil || n != 1<<10 {
					failed.Add(1)
					t.Errorf("read %d bytes: %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := served.Load(), int64(workers*perWorker); got != want || failed.Load() != 0 {
		t.Fatalf("server handled %d requests, want %d; %d client failures", got, want, failed.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 1 {
		t.Errorf("requests came from %d client addresses, want one connection", len(peers))
	}
}
