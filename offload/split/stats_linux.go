package split

import (
	"bufio"
	"fmt"
	"io"

	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
)

// Stats counts what an agent did.
type Stats struct {
	// Datapath is the wire port's counters: agent verdicts, XDP reasons,
	// AF_XDP frames (Datapath.Forwarded: validated Initials handed to the
	// host port).
	Datapath datapath.Stats
	// HostSent counts frames queued on the host port, HostFailed those
	// dropped for lack of a free frame or TX ring space.
	HostSent, HostFailed uint64
	// Control is the control listener's counters.
	Control announce.ListenerStats
	// AdmitFailed counts announced connection IDs the cache refused.
	AdmitFailed uint64
}

// Stats returns the agent's counters. It fails only when the program's
// counters cannot be read.
func (a *Agent) Stats() (Stats, error) {
	dp, err := a.dp.Stats()
	return Stats{
		Datapath:    dp,
		HostSent:    a.host.sent.Load(),
		HostFailed:  a.host.failed.Load(),
		Control:     a.listener.Stats(),
		AdmitFailed: a.admitFailed.Load(),
	}, err
}

// WriteMetrics writes the datapath's metrics (the integrated mode's
// turboretry_agent_*, turboretry_xdp_packets_total and
// turboretry_afxdp_frames_total), then the host port's and the control
// channel's, in the Prometheus text exposition format.
func (a *Agent) WriteMetrics(w io.Writer) error {
	if err := a.dp.WriteMetrics(w); err != nil {
		return err
	}
	s, err := a.Stats()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# HELP turboretry_split_host_frames_total Validated Initials sent out of the host port, by result.")
	fmt.Fprintln(bw, "# TYPE turboretry_split_host_frames_total counter")
	fmt.Fprintf(bw, "turboretry_split_host_frames_total{result=\"sent\"} %d\n", s.HostSent)
	fmt.Fprintf(bw, "turboretry_split_host_frames_total{result=\"failed\"} %d\n", s.HostFailed)
	fmt.Fprintln(bw, "# HELP turboretry_split_admit_failed_total Announced connection IDs the fast-path cache refused.")
	fmt.Fprintln(bw, "# TYPE turboretry_split_admit_failed_total counter")
	fmt.Fprintf(bw, "turboretry_split_admit_failed_total %d\n", s.AdmitFailed)
	writeControlMetrics(bw, s.Control)
	return bw.Flush()
}
