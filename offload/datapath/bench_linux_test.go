package datapath

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/flood"
)

// initialPool returns n real client Initials.
func initialPool(tb testing.TB, n int) [][]byte {
	tb.Helper()
	gen, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: n})
	if err != nil {
		tb.Fatal(err)
	}
	pool := make([][]byte, n)
	for i := range pool {
		if pool[i], err = gen.Next(nil); err != nil {
			tb.Fatal(err)
		}
	}
	return pool
}

// exchange sends count Initials from the pool in windows of window and
// reads as many Retries, failing on a lost one (hang guard: the client
// socket's read timeout).
func (env *testEnv) exchange(tb testing.TB, pool [][]byte, count, window int, buf []byte) {
	for done := 0; done < count; {
		w := min(window, count-done)
		for i := range w {
			env.send(tb, pool[(done+i)%len(pool)])
		}
		for range w {
			if _, err := readUDP(env.client, buf); err != nil {
				tb.Fatalf("Retry missing after %d exchanges: %v", done, err)
			}
		}
		done += w
	}
}

// TestSteadyStateAllocations checks that the datapath does not allocate
// per packet: over 1000 Retries the whole process allocates far less than
// once per packet. Heartbeats (a BPF map update allocates a few times)
// are pushed out of the measurement with a long interval.
func TestSteadyStateAllocations(t *testing.T) {
	const count = 1000
	if raceEnabled {
		t.Skip("skipping: the race detector allocates by itself")
	}
	env := newTestEnv(t, func(c *Config) {
		c.StaleAfter, c.HeartbeatInterval = time.Hour, 30*time.Minute
	}, hangGuard)
	pool := initialPool(t, 16)
	buf := make([]byte, 2048)
	env.exchange(t, pool, 200, 50, buf) // warm up: key caches, rings
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	env.exchange(t, pool, count, 50, buf)
	runtime.ReadMemStats(&after)
	per := float64(after.Mallocs-before.Mallocs) / count
	t.Logf("%.3f allocations per Retry, whole process", per)
	if per >= 0.05 {
		t.Fatalf("%.2f allocations per Retry through the datapath; want none per packet", per)
	}
}

// BenchmarkDatapathRetry measures Retries per second through the whole
// datapath: a client socket sends real Initials over the veth pair (32 in
// flight), XDP redirects them to AF_XDP, the agent answers, and the Retry
// frames go back through AF_XDP TX to the client socket.
func BenchmarkDatapathRetry(b *testing.B) {
	env := newTestEnv(b, nil, hangGuard)
	pool := initialPool(b, 64)
	buf := make([]byte, 2048)
	env.exchange(b, pool, 256, 32, buf)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	env.exchange(b, pool, b.N, 32, buf)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "retries/s")
}

// BenchmarkEngineRetry is the agent engine alone on the same Initials:
// the ceiling the datapath's I/O cost is measured against.
func BenchmarkEngineRetry(b *testing.B) {
	cache, err := fastpath.New(fastpath.Key{1}, agent.DefaultCIDLen)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := agent.New(agent.Config{KeyRing: testKeyRing(b), Cache: cache})
	if err != nil {
		b.Fatal(err)
	}
	w := eng.Worker(0)
	pool := initialPool(b, 64)
	out := make([]byte, 0, agent.MaxReplyLen)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if v, r, _ := w.Process(pool[i%len(pool)], clientAP, out); v != agent.SendReply {
			b.Fatalf("verdict %v (%v), want a Retry", v, r)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "retries/s")
}

// idleNs returns the machine's idle plus iowait time from /proc/stat in
// ns (USER_HZ ticks, 100 per second on every Linux architecture; idle is
// measured at idle entry and exit on a tickless kernel, so it is exact
// where the busy columns are tick-sampled) and the number of CPUs.
func idleNs(tb testing.TB) (ns float64, cpus int) {
	tb.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		switch {
		case len(f) > 5 && f[0] == "cpu":
			idle, err1 := strconv.ParseUint(f[4], 10, 64)
			iowait, err2 := strconv.ParseUint(f[5], 10, 64)
			if err1 != nil || err2 != nil {
				tb.Fatalf("/proc/stat: %q", line)
			}
			ns = float64(idle+iowait) * 1e7
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			cpus++
		}
	}
	return ns, cpus
}

// BenchmarkDatapathRetryQueues measures Retries per second through the
// whole datapath with 1 and 2 receive queues (one AF_XDP socket and agent
// worker each): 32 client sockets, which the client's kernel spreads over
// the veth's queues by flow hash, each keep 2 Initials in flight. It reports the
// machine's busy CPU time per Retry (generator, veth, XDP and agent
// together: all on this machine's CPUs).
func BenchmarkDatapathRetryQueues(b *testing.B) {
	for _, queues := range []int{1, 2} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			const flows, window = 32, 2
			env := newTestEnvQueues(b, queues, nil, hangGuard)
			if env.dp.Queues() != queues {
				b.Fatalf("%d queues served, want %d", env.dp.Queues(), queues)
			}
			pool := initialPool(b, 64)
			clients := make([]int, flows)
			env.in(b, env.nsC, func() {
				for i := range clients {
					clients[i] = udpSocket(b, netip.AddrPortFrom(ipC, uint16(52000+i)), serverAP, hangGuard)
				}
			})
			run := func(total int) {
				var wg sync.WaitGroup
				errs := make(chan error, flows)
				for i, fd := range clients {
					n := total / flows
					if i < total%flows {
						n++
					}
					wg.Go(func() {
						buf := make([]byte, 2048)
						for done := 0; done < n; {
							w := min(window, n-done)
							for j := range w {
								if _, err := unix.Write(fd, pool[(i*window+done+j)%len(pool)]); err != nil {
									errs <- err
									return
								}
							}
							for range w {
								if _, err := readUDP(fd, buf); err != nil {
									errs <- fmt.Errorf("flow %d: Retry missing after %d: %w", i, done, err)
									return
								}
							}
							done += w
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			run(flows * 64) // warm up: key caches, rings
			idle0, cpus := idleNs(b)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			run(b.N)
			wall := time.Since(start)
			b.StopTimer()
			idle1, _ := idleNs(b)
			busy := max(float64(cpus)*float64(wall)-(idle1-idle0), 0)
			b.ReportMetric(float64(b.N)/wall.Seconds(), "retries/s")
			b.ReportMetric(busy/float64(b.N), "machine-ns/retry")
			for i, q := range env.dp.queues {
				b.Logf("queue %d: %d frames received", i, q.counters.framesRX.Load())
			}
		})
	}
}
