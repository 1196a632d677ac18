package datapath

import (
	"bufio"
	"fmt"
	"io"

	"github.com/turboretry/turboretry/offload/xdp"
)

// Stats returns the datapath's counters. It fails only when the program's
// counters cannot be read.
func (d *Datapath) Stats() (Stats, error) {
	s := Stats{Agent: d.engine.Stats()}
	for _, q := range d.queues {
		c := &q.counters
		s.FramesRX += c.framesRX.Load()
		s.FramesTX += c.framesTX.Load()
		s.Delivered += c.delivered.Load()
		s.Forwarded += c.forwarded.Load()
		s.Unparsed += c.unparsed.Load()
		s.ReplyFailed += c.replyFailed.Load()
	}
	var err error
	s.XDP, err = d.prog.Counters()
	return s, err
}

// WriteMetrics writes the agent's metrics (agent.Engine.WriteMetrics), the
// program's packet counts by reason and the AF_XDP frame counts in the
// Prometheus text exposition format.
func (d *Datapath) WriteMetrics(w io.Writer) error {
	if err := d.engine.WriteMetrics(w); err != nil {
		return err
	}
	s, err := d.Stats()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# HELP turboretry_xdp_packets_total Packets the XDP fast path handled, by reason.")
	fmt.Fprintln(bw, "# TYPE turboretry_xdp_packets_total counter")
	for r := range xdp.NumReasons {
		fmt.Fprintf(bw, "turboretry_xdp_packets_total{reason=%q} %d\n", xdp.Reason(r), s.XDP[r])
	}
	fmt.Fprintln(bw, "# HELP turboretry_afxdp_frames_total AF_XDP frames of the agent datapath, by direction and outcome.")
	fmt.Fprintln(bw, "# TYPE turboretry_afxdp_frames_total counter")
	for _, c := range []struct {
		dir, result string
		n           uint64
	}{
		{"rx", "received", s.FramesRX},
		{"rx", "delivered", s.Delivered},
		{"rx", "forwarded", s.Forwarded},
		{"rx", "unparsed", s.Unparsed},
		{"tx", "sent", s.FramesTX},
		{"tx", "failed", s.ReplyFailed},
	} {
		fmt.Fprintf(bw, "turboretry_afxdp_frames_total{direction=%q,result=%q} %d\n", c.dir, c.result, c.n)
	}
	return bw.Flush()
}
