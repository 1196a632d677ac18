package benchmark

import (
	"context"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// The server spread over workers (serve --workers, docs/reuseport.md):
// variants (e1) and (e2) are our file server with 1 and 2 workers, no
// Retry, no offload, serving bulk.bin beside the demo site.
const (
	workers1 variant = "e-workers-1"
	workers2 variant = "e-workers-2"
)

// bulkSize is the file the throughput half downloads again and again.
const bulkSize = 8 << 20

// writeBulk puts bulk.bin (pseudo-random, so nothing compresses it on the
// way) and an index page (what startServer waits for) into dir/www and
// returns that directory, the server's root.
func writeBulk(dir string) (string, error) {
	root := filepath.Join(dir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("<html><body>bulk.bin</body></html>\n"), 0o644); err != nil {
		return "", err
	}
	b := make([]byte, bulkSize)
	r := rand.NewChaCha8([32]byte{13})
	_, _ = r.Read(b)
	return root, os.WriteFile(filepath.Join(root, "bulk.bin"), b, 0o644)
}

// workerLoad is one measurement window's result.
type workerLoad struct {
	count      float64 // handshakes completed, or QUIC packets (both directions)
	bytes      float64 // response bytes (throughput half)
	wall       time.Duration
	machine    float64 // busy ns of the whole machine
	server     float64 // the server process's ns (schedstat)
	background float64 // busy share of all CPUs in a quiet second before
}

// measure runs load for d, with the machine's and the server process's
// CPU read around it; load returns what it counted.
func measure(tb testing.TB, pid int, d time.Duration, load func(ctx context.Context) (count, bytes float64)) workerLoad {
	tb.Helper()
	var w workerLoad
	q0, err := readMachineCPU()
	must(tb, err)
	time.Sleep(time.Second)
	q1, err := readMachineCPU()
	must(tb, err)
	w.background = busyShare(q0, q1)
	p0, err := readProcCPU(pid)
	must(tb, err)
	m0, err := readMachineCPU()
	must(tb, err)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	start := time.Now()
	w.count, w.bytes = load(ctx)
	w.wall = time.Since(start)
	cancel()
	m1, err := readMachineCPU()
	must(tb, err)
	p1, err := readProcCPU(pid)
	must(tb, err)
	w.machine = busyNs(m0, m1)
	w.server, _, _ = p1.since(p0)
	return w
}

// handshakes dials new connections from conc goroutines until ctx ends,
// each completing its handshake and closing at once, and counts them.
func handshakes(tb testing.TB, s *benchServer, conc int) func(ctx context.Context) (float64, float64) {
	return func(ctx context.Context) (float64, float64) {
		var n atomic.Int64
		var wg sync.WaitGroup
		tc := s.tls.Clone()
		tc.NextProtos = []string{http3.NextProtoH3}
		addr := s.url[len("https://") : len(s.url)-1]
		for range conc {
			wg.Go(func() {
				for ctx.Err() == nil {
					dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					c, err := s.dial(dctx, addr, tc, nil)
					cancel()
					if err != nil {
						if ctx.Err() == nil {
							tb.Errorf("dial: %v", err)
						}
						return
					}
					_ = c.CloseWithError(0, "")
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(n.Load()), 0
	}
}

// bulk downloads bulk.bin over conns connections (one HTTP/3 client
// each) until ctx ends, and returns the QUIC packets the connections sent
// and received (every one passed through the server) and the body bytes.
func bulk(tb testing.TB, s *benchServer, conns int) func(ctx context.Context) (float64, float64) {
	return func(ctx context.Context) (float64, float64) {
		var bytes atomic.Int64
		var mu sync.Mutex
		var qconns []*quic.Conn
		var wg sync.WaitGroup
		for range conns {
			tr := &http3.Transport{TLSClientConfig: s.tls.Clone(),
				Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
					c, err := s.dial(ctx, addr, tc, qc)
					if err == nil {
						mu.Lock()
						qconns = append(qconns, c)
						mu.Unlock()
					}
					return c, err
				}}
			client := &http.Client{Transport: tr}
			wg.Go(func() {
				defer tr.Close()
				for ctx.Err() == nil {
					req, err := http.NewRequestWithContext(ctx, "GET", s.url+"bulk.bin", nil)
					must(tb, err)
					resp, err := client.Do(req)
					if err != nil {
						if ctx.Err() == nil {
							tb.Errorf("GET bulk.bin: %v", err)
						}
						return
					}
					k, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					bytes.Add(k)
				}
			})
		}
		wg.Wait()
		packets := 0.0
		mu.Lock()
		for _, c := range qconns {
			st := c.ConnectionStats()
			packets += float64(st.PacketsSent + st.PacketsReceived)
		}
		mu.Unlock()
		return packets, float64(bytes.Load())
	}
}

// BenchmarkWorkers measures our file server with 1 and 2 workers in one
// run: handshakes per second (8 clients dialing fresh connections, each
// closed once its handshake completes) and bulk throughput (4 connections
// downloading an 8 MiB file again and again), each for 3 s from the client
// namespace, with the machine's and the server process's CPU per handshake
// and per QUIC packet. The load generator runs on the same 2 CPUs, so the
// ratios show what a second worker buys when the generator competes with
// it; background-busy-% is the machine's load in a quiet second before
// each window (other engineers' builds).
func BenchmarkWorkers(b *testing.B) {
	const window = 3 * time.Second
	results := map[variant][2]workerLoad{}
	for _, v := range []variant{workers1, workers2} {
		b.Run(string(v), func(b *testing.B) {
			n := newBenchNet(b)
			s := startServer(b, n, v)
			hs := measure(b, s.pid, window, handshakes(b, s, 8))
			bk := measure(b, s.pid, window, bulk(b, s, 4))
			results[v] = [2]workerLoad{hs, bk}
			b.ReportMetric(hs.count/hs.wall.Seconds(), "handshakes/s")
			b.ReportMetric(hs.machine/hs.count/1e3, "machine-us/handshake")
			b.ReportMetric(hs.server/hs.count/1e3, "server-us/handshake")
			b.ReportMetric(bk.bytes*8/bk.wall.Seconds()/1e6, "Mbit/s")
			b.ReportMetric(bk.machine/bk.count, "machine-ns/packet")
			b.ReportMetric(bk.server/bk.count, "server-ns/packet")
			b.ReportMetric(100*max(hs.background, bk.background), "background-busy-%")
		})
	}
	one, two := results[workers1], results[workers2]
	if one[0].count > 0 && two[0].count > 0 && one[1].bytes > 0 && two[1].bytes > 0 {
		b.Logf("2 workers / 1 worker: handshakes/s %.2fx, throughput %.2fx",
			(two[0].count/two[0].wall.Seconds())/(one[0].count/one[0].wall.Seconds()),
			(two[1].bytes/two[1].wall.Seconds())/(one[1].bytes/one[1].wall.Seconds()))
	}
}

// workersOf is the worker count of variant v.
func workersOf(v variant) int {
	if v == workers2 {
		return 2
	}
	return 1
}
