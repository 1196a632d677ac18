package servebench

import (
	"flag"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var proxiesFlag = flag.String("servebench.proxies", strings.Join(proxyKinds, ","), "the proxies BenchmarkProxy runs, comma-separated")

// BenchmarkProxy compares reverse proxies over HTTP/3 in front of the same
// upstream application (net/http, HTTP/1.1 on loopback, a child process),
// reached by the same client (quic-go's HTTP/3 client): `turboretry serve
// --upstream`, Caddy's reverse_proxy (skipped when caddy is not installed)
// and quic-go's http3.Server with httputil.ReverseProxy. Small responses
// are fetched over *smallConns connections at once (requests per second,
// the proxy's CPU per request); the large one over one connection at a
// time (the proxy's CPU per GB). Names put the proxy last, so `benchstat
// -col /proxy` sets them side by side; `make bench-proxy` runs the test
// binary N times so that the proxies alternate (-count N would not).
func BenchmarkProxy(b *testing.B) {
	up := startUpstream(b)
	for _, kind := range proxyKinds {
		if !slices.Contains(strings.Split(*proxiesFlag, ","), kind) {
			continue
		}
		if kind == "caddy" && caddyMissing() != "" {
			b.Log(caddyMissing())
			continue
		}
		p := startProxy(b, kind, up)
		b.Run("size=1KB/proxy="+kind, func(b *testing.B) { proxySmall(b, p) })
		b.Run("size=64MiB/proxy="+kind, func(b *testing.B) { proxyLarge(b, p) })
		p.stop(b)
	}
}

// proxySmall fetches the small response b.N times in all, over
// *smallConns HTTP/3 connections at once.
func proxySmall(b *testing.B, p *server) {
	url, size := p.url(smallResponse[1:]), responseSizes[smallResponse]
	clients := make([]*http.Client, *smallConns)
	for i := range clients {
		clients[i] = newH3Client()
		defer closeClient(clients[i])
		if err := fetchOnce(clients[i], url, size); err != nil { // the handshake, outside the count
			b.Fatal(err)
		}
	}
	m := p.startMeasure(b)
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
	m.reportProxy(b, p, b.N, size)
}

// proxyLarge fetches the large response b.N times over one connection.
func proxyLarge(b *testing.B, p *server) {
	c := newH3Client()
	defer closeClient(c)
	url, size := p.url(largeResponse[1:]), responseSizes[largeResponse]
	if err := fetchOnce(c, url, size); err != nil {
		b.Fatal(err)
	}
	m := p.startMeasure(b)
	for b.Loop() {
		if err := fetchOnce(c, url, size); err != nil {
			b.Fatal(err)
		}
	}
	m.reportProxy(b, p, b.N, size)
}

// reportProxy reports the proxy's CPU per request (µs) and per GB,
// requests per second, throughput and the proxy's RSS.
func (m measure) reportProxy(b *testing.B, p *server, requests, size int) {
	b.StopTimer()
	cpu := p.cpuSeconds(b) - m.cpu
	elapsed := time.Since(m.start).Seconds()
	bytes := float64(requests) * float64(size)
	b.ReportMetric(cpu*1e6/float64(requests), "proxy-cpu-us/req")
	b.ReportMetric(cpu/(bytes/1e9), "proxy-cpu-s/GB")
	b.ReportMetric(float64(requests)/elapsed, "req/s")
	b.ReportMetric(bytes/1e6/elapsed, "MB/s")
	b.ReportMetric(p.rssBytes(b)/(1<<20), "proxy-rss-MiB")
	b.ReportMetric(0, "ns/op") // wall time per op says little with many connections
}

// TestProxiesForward checks the proxy benchmark's harness: every proxy
// starts in front of the upstream and forwards both responses whole over
// HTTP/3, and its CPU time is read from /proc.
func TestProxiesForward(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds turboretry and starts proxy processes")
	}
	up := startUpstream(t)
	for _, kind := range proxyKinds {
		t.Run(kind, func(t *testing.T) {
			p := startProxy(t, kind, up)
			c := newH3Client()
			defer closeClient(c)
			for _, path := range []string{smallResponse, largeResponse} {
				if err := fetchOnce(c, p.url(path[1:]), responseSizes[path]); err != nil {
					t.Error(err)
				}
			}
			if cpu := p.cpuSeconds(t); cpu <= 0 {
				t.Errorf("proxy CPU %.2f s after forwarding 64 MiB", cpu)
			}
		})
	}
}
