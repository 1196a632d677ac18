package servebench

import (
	"flag"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	smallConns = flag.Int("servebench.conns", 16, "client connections fetching small files at once")
	idleConns  = flag.Int("servebench.idle", 1000, "connections BenchmarkIdleConnMemory holds open")
)

// BenchmarkServe downloads a 64 MiB file over one connection at a time and
// a 100 KB file over many connections at once, from each server over
// HTTP/3 and HTTPS/TCP. Per sub-benchmark it reports the server's CPU
// seconds per GB and milliseconds per request, the client's throughput
// and the server's RSS at the end. Sub-benchmark names put the server
// last, so `benchstat -col /server` sets the servers side by side. go
// test's -count N would run each sub-benchmark N times back to back, so
// `make bench-serve` runs the test binary N times instead: N rounds of
// every server.
func BenchmarkServe(b *testing.B) {
	for _, kind := range serverKinds {
		s := startServer(b, kind)
		for _, proto := range []string{"h3", "tcp"} {
			b.Run("file=64MiB/proto="+proto+"/server="+kind, func(b *testing.B) {
				serveLarge(b, s, proto)
			})
			b.Run("file=100KB/proto="+proto+"/server="+kind, func(b *testing.B) {
				serveSmall(b, s, proto)
			})
		}
		s.stop(b)
	}
}

func newClient(proto string) *http.Client {
	if proto == "h3" {
		return newH3Client()
	}
	return newTCPClient()
}

// serveLarge fetches the large file b.N times over one connection.
func serveLarge(b *testing.B, s *server, proto string) {
	c := newClient(proto)
	defer closeClient(c)
	url, size := s.url(largeFile), fileSizes[largeFile]
	if err := fetchOnce(c, url, size); err != nil { // the handshake, outside the count
		b.Fatal(err)
	}
	m := s.startMeasure(b)
	for b.Loop() {
		if err := fetchOnce(c, url, size); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, s, b.N, size)
}

// serveSmall fetches the small file b.N times in all, over *smallConns
// connections at once.
func serveSmall(b *testing.B, s *server, proto string) {
	clients := make([]*http.Client, *smallConns)
	for i := range clients {
		clients[i] = newClient(proto)
		defer closeClient(clients[i])
		if err := fetchOnce(clients[i], s.url(tinyFile), fileSizes[tinyFile]); err != nil {
			b.Fatal(err)
		}
	}
	url, size := s.url(smallFile), fileSizes[smallFile]
	m := s.startMeasure(b)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for _, c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := fetchOnce(c, url, size); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	m.report(b, s, b.N, size)
}

// measure holds the server's CPU time when a measured loop started.
type measure struct {
	cpu   float64
	start time.Time
}

func (s *server) startMeasure(b *testing.B) measure {
	b.ResetTimer()
	return measure{cpu: s.cpuSeconds(b), start: time.Now()}
}

func (m measure) report(b *testing.B, s *server, requests, size int) {
	b.StopTimer()
	cpu := s.cpuSeconds(b) - m.cpu
	bytes := float64(requests) * float64(size)
	b.ReportMetric(cpu/(bytes/1e9), "srv-cpu-s/GB")
	b.ReportMetric(cpu*1e3/float64(requests), "srv-cpu-ms/req")
	b.ReportMetric(bytes/1e6/time.Since(m.start).Seconds(), "MB/s")
	b.ReportMetric(s.rssBytes(b)/(1<<20), "srv-rss-MiB")
	b.ReportMetric(0, "ns/op") // wall time per op says little with many connections
}

// BenchmarkIdleConnMemory opens *idleConns HTTP/3 connections, each after
// one small request, holds them, and reports the server's RSS growth per
// connection (KiB), the figure an idle keep-alive connection costs.
func BenchmarkIdleConnMemory(b *testing.B) {
	for _, kind := range []string{"turboretry", "quicgo"} {
		b.Run("server="+kind, func(b *testing.B) {
			for b.Loop() {
				s := startServer(b, kind)
				runtime.GC()
				before := s.rssBytes(b)
				clients := make([]*http.Client, *idleConns)
				for i := range clients {
					clients[i] = newH3Client()
					if err := fetchOnce(clients[i], s.url(tinyFile), fileSizes[tinyFile]); err != nil {
						b.Fatalf("connection %d: %v", i, err)
					}
				}
				time.Sleep(2 * time.Second) // let the server settle (acks, tickets, timers)
				after := s.rssBytes(b)
				b.ReportMetric((after-before)/1024/float64(len(clients)), "srv-KiB/conn")
				b.ReportMetric(after/(1<<20), "srv-rss-MiB")
				for _, c := range clients {
					closeClient(c)
				}
				s.stop(b)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
