package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/turboretry/turboretry/offload/reuseport"
)

// The HTTP/3 listener's worker sockets (turboretry serve --workers).
var (
	reuseportWorkers = desc("turboretry_reuseport_workers", "UDP sockets (workers, each with its own receive loop) the HTTP/3 listener runs, and how datagrams are spread over them.", "mode")
	reuseportPackets = desc("turboretry_reuseport_packets_total", "Datagrams the sk_reuseport program placed, by decision: steered (worker in the server's connection ID), hashed (client-chosen DCID), or left to the kernel (undecodable, truncated, no_socket).", "decision")
)

// ReuseportSnapshot is what NewReuseportCollector exports.
type ReuseportSnapshot struct {
	Workers int
	Mode    reuseport.Mode
	Stats   reuseport.Stats
}

type reuseportCollector struct {
	stats func() (ReuseportSnapshot, bool, error)
}

// NewReuseportCollector exports what stats returns: nothing while it says
// no sockets are bound (ok false); an error reading the program's counters
// fails that part of the scrape only.
func NewReuseportCollector(stats func() (st ReuseportSnapshot, ok bool, err error)) prometheus.Collector {
	return reuseportCollector{stats}
}

func (c reuseportCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, reuseportWorkers, reuseportPackets)
}

func (c reuseportCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok, err := c.stats()
	if !ok {
		return
	}
	ch <- gaugeOf(reuseportWorkers, float64(st.Workers), st.Mode.String())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(reuseportPackets, err)
		return
	}
	for _, d := range []struct {
		name string
		n    uint64
	}{
		{"steered", st.Stats.Steered},
		{"hashed", st.Stats.Hashed},
		{"undecodable", st.Stats.Undecodable},
		{"truncated", st.Stats.Truncated},
		{"no_socket", st.Stats.NoSocket},
	} {
		ch <- counterOf(reuseportPackets, d.n, d.name)
	}
}
