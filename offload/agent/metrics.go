package agent

import (
	"bufio"
	"fmt"
	"io"
)

// WriteMetrics writes the engine's counters in the Prometheus text
// exposition format: turboretry_agent_packets_total by verdict and reason
// (every reason, zeros included, so series do not appear out of nowhere),
// turboretry_agent_egress_packets_total, the heartbeat time and the paused
// flag. Counts are those of Stats.
func (e *Engine) WriteMetrics(w io.Writer) error {
	s := e.Stats()
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# HELP turboretry_agent_packets_total Datagrams the Retry agent handled, by verdict and reason.")
	fmt.Fprintln(bw, "# TYPE turboretry_agent_packets_total counter")
	for r := Reason(1); int(r) < NumReasons; r++ {
		fmt.Fprintf(bw, "turboretry_agent_packets_total{verdict=%q,reason=%q} %d\n", r.Verdict(), r, s.Packets[r])
	}
	fmt.Fprintln(bw, "# HELP turboretry_agent_egress_packets_total Host datagrams the agent observed, by whether a connection ID was admitted.")
	fmt.Fprintln(bw, "# TYPE turboretry_agent_egress_packets_total counter")
	fmt.Fprintf(bw, "turboretry_agent_egress_packets_total{result=%q} %d\n", "learned", s.EgressLearned)
	fmt.Fprintf(bw, "turboretry_agent_egress_packets_total{result=%q} %d\n", "ignored", s.EgressIgnored)
	fmt.Fprintln(bw, "# HELP turboretry_agent_cache_insert_errors_total Connection IDs the fast-path cache refused to admit.")
	fmt.Fprintln(bw, "# TYPE turboretry_agent_cache_insert_errors_total counter")
	fmt.Fprintf(bw, "turboretry_agent_cache_insert_errors_total %d\n", s.CacheErrors)
	fmt.Fprintln(bw, "# HELP turboretry_agent_heartbeat_timestamp_seconds Time of the agent's last heartbeat.")
	fmt.Fprintln(bw, "# TYPE turboretry_agent_heartbeat_timestamp_seconds gauge")
	var hb float64
	if t := e.Heartbeat(); !t.IsZero() {
		hb = float64(t.UnixNano()) / 1e9
	}
	fmt.Fprintf(bw, "turboretry_agent_heartbeat_timestamp_seconds %.3f\n", hb)
	fmt.Fprintln(bw, "# HELP turboretry_agent_paused Whether the agent is paused (1) by fault injection.")
	fmt.Fprintln(bw, "# TYPE turboretry_agent_paused gauge")
	paused := 0
	if e.Paused() {
		paused = 1
	}
	fmt.Fprintf(bw, "turboretry_agent_paused %d\n", paused)
	return bw.Flush()
}
