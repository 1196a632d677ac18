package benchmark

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/flood"
)

// Search parameters, kept small so the whole set ends within minutes.
const (
	floodFor     = 2 * time.Second        // one flood step
	benignN      = 5                      // benign requests per step, each on a fresh connection
	benignLimit  = time.Second            // each must complete within this
	startRate    = 20_000.0               // first step, packets per second
	maxRate      = 1_280_000.0            // no step above this
	bisectSteps  = 3                      // after the first failure
	ceilingShare = 0.75                   // below this share of the target, the generator is the limit
	settle       = 300 * time.Millisecond // lets queues drain between steps
)

// attacker floods the server from the attacker namespace with spoofed raw
// frames (pool mode, sources in spoofNet).
type attacker struct {
	sender *flood.PacketSender
	src    *flood.FrameSource
}

func newAttacker(tb testing.TB, n *benchNet) *attacker {
	tb.Helper()
	a := &attacker{}
	must(tb, n.in(n.attacker, func() error {
		var err error
		a.sender, err = flood.NewPacketSender(attackIf, 0)
		return err
	}))
	tb.Cleanup(func() { a.sender.Close() })
	gen, err := flood.NewGenerator(flood.GeneratorConfig{})
	must(tb, err)
	dst, err := net.ParseMAC(macServer)
	must(tb, err)
	a.src, err = flood.NewFrameSource(gen, flood.FrameConfig{
		Target: netip.AddrPortFrom(ipServer, serverPort),
		Spoof:  spoofNet,
		SrcMAC: a.sender.HardwareAddr(),
		DstMAC: dst,
	})
	must(tb, err)
	return a
}

// run floods at rate (0: as fast as possible) for d.
func (a *attacker) run(ctx context.Context, rate float64, d time.Duration) (flood.Stats, error) {
	count := uint64(rate*d.Seconds()) + 1
	if rate == 0 {
		count = 1 << 40 // bounded by d
	}
	return flood.Run(ctx, flood.RunConfig{Count: count, Duration: d, Rate: rate}, a.src, a.sender)
}

// step is one flood at a target rate with the benign requests beside it.
type step struct {
	rate, achieved float64
	failed         int // benign requests that did not complete in time
	firstErr       error
}

func (s step) ok() bool { return s.failed == 0 }

// runStep floods at rate (0: unpaced) while the benign client makes benignN requests
// on fresh connections, sequentially, each within benignLimit.
func runStep(tb testing.TB, srv *benchServer, a *attacker, rate float64) step {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		st  flood.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := a.run(ctx, rate, floodFor)
		done <- result{st, err}
	}()
	// Let the flood reach its rate (and the server's queues fill) first.
	time.Sleep(200 * time.Millisecond)
	s := step{rate: rate}
	for range benignN {
		if _, err := srv.get(benignLimit); err != nil {
			s.failed++
			if s.firstErr == nil {
				s.firstErr = err
			}
		}
	}
	r := <-done
	if r.err != nil {
		tb.Fatalf("flood at %.0f pps: %v", rate, r.err)
	}
	s.achieved = r.st.PPS
	time.Sleep(settle)
	tb.Logf("target %8.0f pps, sent %8.0f pps, benign failures %d/%d %v", rate, s.achieved, s.failed, benignN, s.firstErr)
	return s
}

// maxAttackRate doubles the rate from startRate until a benign request
// fails or the generator falls short of the target; in the latter case
// one more step floods unpaced, as fast as the generator can beside the
// server. After a failure it bisects between the last good and the first
// bad rate. It returns the highest rate with zero benign failures (as the
// generator achieved it) and whether the generator, not the server, ended
// the search.
func maxAttackRate(tb testing.TB, srv *benchServer, a *attacker) (best float64, generatorBound bool) {
	tb.Helper()
	var good, bad float64
	for rate := startRate; rate <= maxRate; rate *= 2 {
		s := runStep(tb, srv, a, rate)
		if !s.ok() {
			bad = rate
			break
		}
		good, best = rate, max(best, s.achieved)
		if s.achieved < ceilingShare*rate {
			break
		}
	}
	if bad == 0 {
		s := runStep(tb, srv, a, 0)
		if s.ok() {
			return max(best, s.achieved), true
		}
		bad = s.achieved
	}
	for range bisectSteps {
		if good == 0 {
			good = startRate / 2
		}
		mid := (good + bad) / 2
		if s := runStep(tb, srv, a, mid); s.ok() {
			good, best = mid, max(best, s.achieved)
		} else {
			bad = mid
		}
	}
	return best, false
}

// benchAttack runs the search once against variant v and reports the
// result; b.N is ignored, the search is the measurement (-benchtime=1x).
func benchAttack(b *testing.B, v variant) (best float64, generatorBound bool) {
	n := netFor(b, v)
	srv := startServer(b, n, v)
	a := newAttacker(b, n)
	best, bound := maxAttackRate(b, srv, a)
	b.ReportMetric(best, "max-attack-pps")
	bound01 := 0.0
	if bound {
		bound01 = 1
		b.Logf("%s survived the generator's ceiling: max attack rate >= %.0f pps", v, best)
	}
	b.ReportMetric(bound01, "generator-bound")
	if host, agentSent, ok := srv.retries(); ok {
		b.ReportMetric(host, "host-retries")
		b.ReportMetric(agentSent, "agent-retries")
	}
	return best, bound
}

// BenchmarkMaxAttackRate finds, per variant, the highest spoofed Initial
// flood rate at which every benign request still completes in time.
func BenchmarkMaxAttackRate(b *testing.B) {
	type result struct {
		best  float64
		bound bool
	}
	got := map[variant]result{}
	for _, v := range []variant{quicGoRetry, hostRetry, xdpAgent, splitAgent} {
		b.Run(string(v), func(b *testing.B) {
			best, bound := benchAttack(b, v)
			got[v] = result{best, bound}
			if v != splitAgent {
				return
			}
			// (d) runs last and logs its ratios (the parent's log shows
			// only with -v).
			for _, o := range []variant{quicGoRetry, hostRetry, xdpAgent} {
				r, ok := got[o]
				if !ok || r.best <= 0 {
					b.Logf("no figure for %s: no ratio", o)
					continue
				}
				b.Logf("max attack rate %s/%s = %.0f/%.0f pps = %.2fx (%s generator-bound: %v, %s: %v)",
					splitAgent, o, best, r.best, best/r.best, splitAgent, bound, o, r.bound)
			}
		})
	}
}

// BenchmarkFloodCeiling is the generator's own rate on this machine: as
// fast as possible for one second into the server namespace, where no
// server listens and the kernel drops the datagrams.
func BenchmarkFloodCeiling(b *testing.B) {
	n := newBenchNet(b)
	a := newAttacker(b, n)
	st, err := a.run(context.Background(), 0, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	if st.Errors != 0 {
		b.Logf("%d send errors, first: %s", st.Errors, st.FirstError)
	}
	b.ReportMetric(st.PPS, "pps")
}
