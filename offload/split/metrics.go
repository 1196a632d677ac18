package split

import (
	"fmt"
	"io"

	"github.com/turboretry/turboretry/offload/announce"
)

// writeControlMetrics writes the control listener's counters in the
// Prometheus text exposition format.
func writeControlMetrics(w io.Writer, s announce.ListenerStats) {
	fmt.Fprintln(w, "# HELP turboretry_announce_messages_total Authentic connection ID announcements the agent accepted.")
	fmt.Fprintln(w, "# TYPE turboretry_announce_messages_total counter")
	fmt.Fprintf(w, "turboretry_announce_messages_total %d\n", s.Messages)
	fmt.Fprintln(w, "# HELP turboretry_announce_cids_total Announced connection IDs admitted to the fast path.")
	fmt.Fprintln(w, "# TYPE turboretry_announce_cids_total counter")
	fmt.Fprintf(w, "turboretry_announce_cids_total %d\n", s.CIDs)
	fmt.Fprintln(w, "# HELP turboretry_announce_rejected_total Control datagrams the agent rejected, by reason.")
	fmt.Fprintln(w, "# TYPE turboretry_announce_rejected_total counter")
	for r := announce.Reason(1); int(r) < announce.NumReasons; r++ {
		fmt.Fprintf(w, "turboretry_announce_rejected_total{reason=%q} %d\n", r, s.Rejected[r])
	}
}
