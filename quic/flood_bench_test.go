//go:build unix

package quic

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFloodAutoRetry measures the default policy (AutoRetry(64)) of
// an EarlyListener under a flood of complete one-datagram ClientHellos
// with fresh connection IDs, fed from memory: of the first 100, 65 become
// connections that stay unvalidated; 4096 more, fed in turn, are all
// answered with Retries (a repeat of one of them creates no state either).
// It reports Retries per second, the process's CPU time per flood datagram
// (the feed's copy included), and per connection during the warm-up
// (about the cost of a server handshake up to 0.5-RTT: what every flood
// datagram would cost without the Retry). Run with -cpu=1 for one core:
//
//	go test -run='^$' -bench=FloodAutoRetry -benchmem -cpu=1 ./quic/
func BenchmarkFloodAutoRetry(b *testing.B) {
	const warm = 100
	pkts, _ := floodInitials(b, warm+4096)
	c := newFeedConn(pkts)
	c.loopFrom = warm
	tr := &Transport{Conn: c, AddressValidation: &AddressValidationConfig{}}
	defer tr.Close()
	ln, err := tr.ListenEarly(serverTLS(b), &Config{HandshakeIdleTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			if _, err := ln.Accept(b.Context()); err != nil {
				return
			}
		}
	}()
	// Past the threshold: the connections exist, Retries flow. What the
	// warm-up cost is about that of the connections' handshakes.
	cpuWarm := cpuTime(b)
	c.run(b, 2*warm)
	cpuWarm = cpuTime(b) - cpuWarm
	av := tr.AddressValidationStats()
	if av.RetriesSent == 0 {
		b.Fatal("no Retry under the flood")
	}
	accepted := tr.Stats().Connections
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, fed0, retries0, start := cpuTime(b), c.fed.Load(), tr.AddressValidationStats().RetriesSent, time.Now()
	c.run(b, b.N)
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	fed, retries := c.fed.Load()-fed0, tr.AddressValidationStats().RetriesSent-retries0
	b.ReportMetric(float64(retries)/elapsed.Seconds(), "retries/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(fed), "cpu-ns/pkt")
	b.ReportMetric(float64(cpuWarm.Nanoseconds())/float64(accepted), "cpu-ns/accepted")
	if st := tr.Stats(); st.Connections > DefaultRetryThreshold+1 {
		b.Fatalf("%d connections under the flood", st.Connections)
	}
}
