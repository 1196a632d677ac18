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

// BenchmarkRefusedInitials measures a listener at its connection cap
// refusing a flood of Initials fed from memory, each with a stateless
// CONNECTION_REFUSED: "fresh" attempts of one Initial each, and "pairs",
// each attempt's Initial twice in a row, as quic-go's ClientHello with its
// ML-KEM key share comes in two datagrams. It reports the process's CPU
// time per refused Initial (the feed's copy included):
//
//	go test -run='^$' -bench=RefusedInitials -benchmem -cpu=1 ./quic/
func BenchmarkRefusedInitials(b *testing.B) {
	const attempts = 8192
	for _, perAttempt := range []int{1, 2} {
		name := map[int]string{1: "fresh", 2: "pairs"}[perAttempt]
		b.Run(name, func(b *testing.B) {
			pkts := make([][]byte, 0, attempts*perAttempt)
			for i := range attempts {
				dcid := []byte{1, 2, 3, 4, 5, 6, byte(i >> 8), byte(i)}
				pkt := buildClientInitial(b, dcid, []byte{9, 9, 9, byte(i)}, nil, minInitialSize)
				for range perAttempt {
					pkts = append(pkts, pkt)
				}
			}
			c := newFeedConn(pkts)
			tr := &Transport{Conn: c}
			defer tr.Close()
			ln, err := tr.Listen(serverTLS(b), &Config{MaxConnections: 1})
			if err != nil {
				b.Fatal(err)
			}
			// The cap is taken: every Initial is refused.
			ln.s.mu.Lock()
			ln.s.load.conns = 1
			ln.s.mu.Unlock()
			c.run(b, 100)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, refused0 := cpuTime(b), tr.Stats().Refused[RefusedConnectionCap.String()]
			c.run(b, b.N)
			cpu, refused := cpuTime(b)-cpu0, tr.Stats().Refused[RefusedConnectionCap.String()]-refused0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(refused), "cpu-ns/refused")
		})
	}
}
