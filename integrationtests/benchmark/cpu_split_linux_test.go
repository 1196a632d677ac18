package benchmark

import (
	"testing"
	"time"
)

// benchSplitCPU is BenchmarkAttackCPU's part for variant (d): a baseline of
// the same flood through (d)'s network (client bridge, dpu bridge, server
// namespace) with no agent and no server, then (d) itself, whose defended
// side is two processes, the agent in dpu and the server. base and costs
// are the other variants' figures, for the ratios.
//
// (d)'s attributable cost subtracts the plain baseline, not the dpu one:
// the flood's path up to the XDP program (attacker veth, client bridge,
// veth into p0) is the same as up to srv0 in (c), and (d) stops the flood
// at p0, so it never pays for the dpu bridge that the dpu baseline's
// flood crosses. The dpu baseline is logged for that comparison: what the
// second hop costs when everything passes (the agent gone, fail-open).
func benchSplitCPU(b *testing.B, base *cpuCost, costs map[variant]cpuCost) {
	var dpuBase *cpuCost
	b.Run("baseline-dpu-no-server", func(b *testing.B) {
		n := newSplitBenchNet(b)
		a := newAttacker(b, n)
		c := measureFlood(b, a, 0, 0)
		cpuLog(b, "baseline through dpu", c, false)
		dpuBase = &c
		b.ReportMetric(c.pps, "sent-pps")
		b.ReportMetric(c.machine, "machine-ns/pkt")
		b.ReportMetric(100*c.background, "background-busy-%")
	})
	b.Run(string(splitAgent), func(b *testing.B) {
		n := newSplitBenchNet(b)
		srv := startServer(b, n, splitAgent)
		checkServerPID(b, srv.pid)
		checkServerPID(b, srv.agentPID)
		a := newAttacker(b, n)
		c := measureFlood(b, a, srv.pid, srv.agentPID)
		cpuLog(b, string(splitAgent), c, true)
		if _, err := srv.get(2 * time.Second); err != nil {
			b.Logf("%s: benign request after the flood failed: %v", splitAgent, err)
		}
		if host, agentSent, ok := srv.retries(); ok {
			b.Logf("%s: host Retries %.0f, agent Retries %.0f", splitAgent, host, agentSent)
		}
		b.ReportMetric(c.pps, "sent-pps")
		b.ReportMetric(c.server, "server-ns/pkt")
		b.ReportMetric(c.agent, "agent-ns/pkt")
		b.ReportMetric(c.machine, "machine-ns/pkt")
		b.ReportMetric(100*c.background, "background-busy-%")
		b.ReportMetric(float64(c.udpDrops), "udp-rcvbuf-drops")
		if base != nil {
			b.ReportMetric(c.machine-base.machine, "attributable-ns/pkt")
		}
		logSplitRatios(b, base, dpuBase, costs, c)
	})
}

// logSplitRatios logs, for (a), (b) and (c) against (d), the cost ratios
// x/(d) (so the capacity ratios (d)/x): attributable whole-machine CPU
// (all against the plain baseline, see benchSplitCPU), and process CPU,
// where (d)'s is its server and agent processes together (in (c) both live
// in the one server process).
func logSplitRatios(tb testing.TB, base, dpuBase *cpuCost, costs map[variant]cpuCost, d cpuCost) {
	tb.Helper()
	if base == nil || dpuBase == nil {
		tb.Log("ratios need both baselines and all variants (-bench=AttackCPU)")
		return
	}
	da := d.machine - base.machine
	dp := d.server + d.agent
	tb.Logf("%s: attributable %.0f ns/pkt (against the dpu baseline, which passes the flood through the dpu bridge: %.0f); processes %.0f (server %.0f + agent %.0f)",
		splitAgent, da, d.machine-dpuBase.machine, dp, d.server, d.agent)
	for _, v := range []variant{quicGoRetry, hostRetry, xdpAgent} {
		x, ok := costs[v]
		if !ok {
			tb.Logf("no figures for %s: no ratio", v)
			continue
		}
		xa := x.machine - base.machine
		if da > 0 {
			tb.Logf("attributable CPU per attack packet %s/%s = %.0f/%.0f ns = %.2fx", v, splitAgent, xa, da, xa/da)
		} else {
			tb.Logf("attributable CPU of %s is %.0f ns, not positive: no ratio", splitAgent, da)
		}
		if dp > 0 {
			tb.Logf("process CPU per attack packet %s/%s = %.0f/%.0f ns = %.2fx", v, splitAgent, x.server, dp, x.server/dp)
		}
	}
}
