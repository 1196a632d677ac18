package benchmark

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// One fixed flood that every variant keeps up with on the shared 2-core
// machine (its UDP socket drops nothing: udp-rcvbuf-drops says so), long
// enough that the 10 ms /proc counters resolve a few hundred ns per packet.
// The paced generator sends about 10 % less than the target.
const (
	cpuRate  = 15_000.0               // packets per second
	cpuFlood = 3 * time.Second        // flood length
	cpuQuiet = time.Second            // idle window before, to gauge other load
	cpuDrain = 500 * time.Millisecond // queued packets finish within the window
)

// cpuCost is one flood's CPU bill, in ns per packet sent.
type cpuCost struct {
	sent       uint64
	pps        float64
	machine    float64 // whole machine: CPUs x wall time - idle - iowait
	machineTck float64 // whole machine, tick-sampled busy columns (under-counts)
	server     float64 // server process, per-thread run time (schedstat)
	serverTick float64 // server process, utime+stime ticks (cross-check)
	exited     int     // server threads that exited during the window
	agent      float64 // (d)'s agent process, per-thread run time (schedstat)
	agentTick  float64 // (d)'s agent process, utime+stime ticks
	self       float64 // this test process (the generator), ticks
	background float64 // busy share of all CPUs in the quiet window, 0..1
	steal      float64 // ns per packet the hypervisor gave to others
	udpDrops   uint64  // server namespace UDP RcvbufErrors during the window
	udpIn      uint64  // server namespace UDP InDatagrams during the window
}

// measureFlood floods at cpuRate for cpuFlood and measures the CPU the
// whole machine and, if pid > 0, the server process (and, if agentPID > 0,
// the split variant's agent process) spent from just before the flood to
// cpuDrain after it.
func measureFlood(tb testing.TB, a *attacker, pid, agentPID int) cpuCost {
	tb.Helper()
	var c cpuCost
	q0, err := readMachineCPU()
	must(tb, err)
	time.Sleep(cpuQuiet)
	q1, err := readMachineCPU()
	must(tb, err)
	c.background = busyShare(q0, q1)

	var p0, p1, ag0, ag1 procCPU
	var u0, u1 map[string]uint64
	g0, err := readProcCPU(os.Getpid())
	must(tb, err)
	if pid > 0 {
		p0, err = readProcCPU(pid)
		must(tb, err)
		u0, err = readUDPCounters(pid)
		must(tb, err)
	}
	if agentPID > 0 {
		ag0, err = readProcCPU(agentPID)
		must(tb, err)
	}
	m0, err := readMachineCPU()
	must(tb, err)
	st, err := a.run(context.Background(), cpuRate, cpuFlood)
	must(tb, err)
	time.Sleep(cpuDrain)
	m1, err := readMachineCPU()
	must(tb, err)
	g1, err := readProcCPU(os.Getpid())
	must(tb, err)
	if pid > 0 {
		p1, err = readProcCPU(pid)
		must(tb, err)
		u1, err = readUDPCounters(pid)
		must(tb, err)
	}
	if agentPID > 0 {
		ag1, err = readProcCPU(agentPID)
		must(tb, err)
	}
	if st.Errors != 0 {
		tb.Logf("%d send errors, first: %s", st.Errors, st.FirstError)
	}
	if st.Sent == 0 {
		tb.Fatal("the flood sent nothing")
	}
	c.sent, c.pps = st.Sent, st.PPS
	n := float64(st.Sent)
	c.machine = busyNs(m0, m1) / n
	c.machineTck = delta(m1.busy, m0.busy) * tickNs / n
	c.steal = delta(m1.steal, m0.steal) * tickNs / n
	_, selfNs, _ := g1.since(g0)
	c.self = selfNs / n
	if pid > 0 {
		ns, tick, exited := p1.since(p0)
		c.server, c.serverTick, c.exited = ns/n, tick/n, exited
		c.udpDrops = uint64(delta(u1["RcvbufErrors"], u0["RcvbufErrors"]))
		c.udpIn = uint64(delta(u1["InDatagrams"], u0["InDatagrams"]))
	}
	if agentPID > 0 {
		ns, tick, _ := ag1.since(ag0)
		c.agent, c.agentTick = ns/n, tick/n
	}
	return c
}

// delta is after - before, or 0 if a counter went backwards (iowait can
// on tickless kernels) rather than a wrapped huge number.
func delta(after, before uint64) float64 {
	if after < before {
		return 0
	}
	return float64(after - before)
}

// busyNs is the CPU time, in ns, that the machine's CPUs were not idle
// between two samples: all CPUs' wall time minus the idle and iowait
// time, which a tickless kernel measures exactly (the tick-sampled busy
// columns miss short bursts). Steal, if any, counts as busy here.
func busyNs(a, b machineCPU) float64 {
	all := float64(b.ncpu) * float64(b.at.Sub(a.at))
	return max(all-(delta(b.idle, a.idle)+delta(b.iowait, a.iowait))*tickNs, 0)
}

// busyShare is the busy fraction of all CPU time between two samples.
func busyShare(a, b machineCPU) float64 {
	all := float64(b.ncpu) * float64(b.at.Sub(a.at))
	if all <= 0 {
		return 0
	}
	return busyNs(a, b) / all
}

// checkServerPID makes sure pid is the server binary itself, not the
// "ip netns exec" wrapper (which execs in place, so the two should agree).
func checkServerPID(tb testing.TB, pid int) {
	tb.Helper()
	self, err := os.Executable()
	must(tb, err)
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	must(tb, err)
	if exe != self {
		tb.Fatalf("server pid %d runs %s, not the test binary %s", pid, exe, self)
	}
}

// cpuLog writes the figures of one flood to the benchmark log.
func cpuLog(tb testing.TB, name string, c cpuCost, server bool) {
	tb.Helper()
	if !server {
		tb.Logf("%s: sent %d (%.0f pps); machine %.0f ns/pkt (tick-sampled %.0f; generator process %.0f, rest %.0f); steal %.0f ns/pkt; background busy %.0f %%",
			name, c.sent, c.pps, c.machine, c.machineTck, c.self, c.machine-c.self, c.steal, 100*c.background)
		return
	}
	tb.Logf("%s: sent %d (%.0f pps); machine %.0f ns/pkt (tick-sampled %.0f; generator process %.0f, server %.0f, agent process %.0f, rest %.0f); server ticks %.0f ns/pkt, %d threads exited; agent ticks %.0f ns/pkt; steal %.0f ns/pkt; background busy %.0f %%; UDP in %d, rcvbuf drops %d",
		name, c.sent, c.pps, c.machine, c.machineTck, c.self, c.server, c.agent, c.machine-c.self-c.server-c.agent, c.serverTick, c.exited, c.agentTick, c.steal, 100*c.background, c.udpIn, c.udpDrops)
}

// BenchmarkAttackCPU measures the CPU each variant's defended side spends
// per spoofed Initial at one fixed flood rate: the server process's own
// time, the whole machine's busy time, and the latter minus a baseline of
// the same flood into the server namespace with no server (kernel drops).
// XDP and softirq work is charged to whatever task it interrupts (often
// the generator), so only the whole-machine figure sees all of it. The
// ratios of the server-attributable costs estimate (c)'s capacity
// advantage without depending on the generator's ceiling.
// benchSplitCPU then adds variant (d), the split agent, with a baseline
// of its own network.
func BenchmarkAttackCPU(b *testing.B) {
	var base *cpuCost
	costs := map[variant]cpuCost{}
	b.Run("baseline-no-server", func(b *testing.B) {
		n := newBenchNet(b)
		a := newAttacker(b, n)
		c := measureFlood(b, a, 0, 0)
		cpuLog(b, "baseline", c, false)
		base = &c
		b.ReportMetric(c.pps, "sent-pps")
		b.ReportMetric(c.machine, "machine-ns/pkt")
		b.ReportMetric(100*c.background, "background-busy-%")
	})
	// (c) runs last, so its sub-benchmark can log the ratios: the parent's
	// own log is printed only with -v.
	for _, v := range []variant{quicGoRetry, hostRetry, xdpAgent} {
		b.Run(string(v), func(b *testing.B) {
			n := newBenchNet(b)
			srv := startServer(b, n, v)
			checkServerPID(b, srv.pid)
			a := newAttacker(b, n)
			c := measureFlood(b, a, srv.pid, 0)
			cpuLog(b, string(v), c, true)
			if _, err := srv.get(2 * time.Second); err != nil {
				b.Logf("%s: benign request after the flood failed: %v", v, err)
			}
			costs[v] = c
			b.ReportMetric(c.pps, "sent-pps")
			b.ReportMetric(c.server, "server-ns/pkt")
			b.ReportMetric(c.machine, "machine-ns/pkt")
			b.ReportMetric(100*c.background, "background-busy-%")
			b.ReportMetric(float64(c.udpDrops), "udp-rcvbuf-drops")
			if base != nil {
				b.ReportMetric(c.machine-base.machine, "attributable-ns/pkt")
			}
			if v == xdpAgent {
				logRatios(b, base, costs)
			}
		})
	}
	benchSplitCPU(b, base, costs)
}

// logRatios logs (a)/(c) and (b)/(c) of the server-attributable cost
// (whole machine minus baseline) and of the server process's own cost.
func logRatios(tb testing.TB, base *cpuCost, costs map[variant]cpuCost) {
	tb.Helper()
	c, ok := costs[xdpAgent]
	if !ok || base == nil {
		tb.Log("ratios need the baseline and all variants (-bench=AttackCPU)")
		return
	}
	for _, v := range []variant{quicGoRetry, hostRetry} {
		x, ok := costs[v]
		if !ok {
			tb.Logf("no figures for %s: no ratio", v)
			continue
		}
		xa, ca := x.machine-base.machine, c.machine-base.machine
		if ca > 0 {
			tb.Logf("server-attributable CPU per attack packet %s/%s = %.0f/%.0f ns = %.2fx", v, xdpAgent, xa, ca, xa/ca)
		} else {
			tb.Logf("server-attributable CPU of %s is %.0f ns, not positive: no ratio", xdpAgent, ca)
		}
		if c.server > 0 {
			tb.Logf("server-process CPU per attack packet %s/%s = %.0f/%.0f ns = %.2fx", v, xdpAgent, x.server, c.server, x.server/c.server)
		}
	}
}
