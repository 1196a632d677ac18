package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/quic"
)

var (
	trConnections     = desc("turboretry_quic_transport_connections", "Server connections the listener holds (established or in the handshake), bounded by MaxConnections.")
	trHandshaking     = desc("turboretry_quic_transport_handshaking", "Server connections whose handshake has not completed, bounded by MaxHandshakes.")
	trUnvalidatedSize = desc("turboretry_quic_unvalidated_bytes", "Estimated memory of the connections whose client address is not validated yet.")
	trAcceptQueue     = desc("turboretry_quic_accept_queue", "Connections ready and waiting for Accept.")
	trSendBuffered    = desc("turboretry_quic_send_buffered_bytes", "Stream data written and not yet acknowledged, over all connections.")
	trSendPeak        = desc("turboretry_quic_send_buffered_peak_bytes", "The highest value of turboretry_quic_send_buffered_bytes so far.")
	trRecvBuffered    = desc("turboretry_quic_receive_buffered_bytes", "Memory stream receive buffers hold for data received and not yet read, over all connections.")
	trRecvOutOfOrder  = desc("turboretry_quic_receive_out_of_order_bytes", "The part of turboretry_quic_receive_buffered_bytes holding data beyond a gap, which the application cannot read yet.")
	trClosedByLimit   = desc("turboretry_quic_closed_by_limit_total", "Connections closed because of the receive memory their peer made the server hold, by limit.", "limit")
	trSendWaits       = desc("turboretry_quic_send_budget_waits_total", "Stream writes that waited for a connection's or the Transport's send budget.")
	trRefused         = desc("turboretry_quic_refused_total", "Connection attempts refused or dropped before the application got them, by reason.", "reason")
	trDropped         = desc("turboretry_quic_datagrams_dropped_total", "Received datagrams dropped, by reason.", "reason")
	trPrefixes        = desc("turboretry_quic_admission_prefixes", "Client source prefixes the listener's admission tracks (bounded by --max-prefixes).")
	trPrefixBytes     = desc("turboretry_quic_admission_prefix_table_bytes", "Estimated memory of the tracked client source prefixes.")
	trPanics          = desc("turboretry_quic_panics_recovered_total", "Panics recovered in the QUIC stack (each a bug, logged at ERROR).")
)

// labelsOf lists the labels String gives the values 0, 1, ... of a
// quic reason type until it says "unknown" (the end of the list).
func labelsOf(name func(int) string) []string {
	var out []string
	for i := 0; i < 256; i++ {
		s := name(i)
		if s == "unknown" {
			break
		}
		out = append(out, s)
	}
	return out
}

var (
	refusalLabels = labelsOf(func(i int) string { return quic.RefusalReason(i).String() })
	dropLabels    = labelsOf(func(i int) string { return quic.DropReason(i).String() })
	limitLabels   = labelsOf(func(i int) string { return quic.ClosedByLimitReason(i).String() })
)

// transportCollector exports a Transport's load and shed-load snapshot.
type transportCollector struct {
	stats func() quic.TransportStats
}

// NewTransportCollector exports what stats returns (typically
// quic.Transport.Stats, or zeros while no Transport runs): the listener's
// load against its limits, the Transport's buffers, and the refusals and
// drops by reason (the prefix_* reasons are admission by source prefix),
// the connections closed for receive memory by limit (every reason from
// the start), and the size of the admission's prefix table. The unvalidated count is
// turboretry_quic_handshakes_in_flight (NewAddressValidationCollector).
func NewTransportCollector(stats func() quic.TransportStats) prometheus.Collector {
	return transportCollector{stats}
}

func (c transportCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, trConnections, trHandshaking, trUnvalidatedSize, trAcceptQueue, trSendBuffered, trSendPeak,
		trRecvBuffered, trRecvOutOfOrder, trSendWaits, trRefused, trDropped, trClosedByLimit, trPrefixes, trPrefixBytes, trPanics)
}

func (c transportCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- gaugeOf(trConnections, float64(st.Connections))
	ch <- gaugeOf(trHandshaking, float64(st.Handshaking))
	ch <- gaugeOf(trUnvalidatedSize, float64(st.UnvalidatedBytes))
	ch <- gaugeOf(trAcceptQueue, float64(st.AcceptQueue))
	ch <- gaugeOf(trSendBuffered, float64(st.SendBuffered))
	ch <- gaugeOf(trSendPeak, float64(st.SendBufferedPeak))
	ch <- gaugeOf(trRecvBuffered, float64(st.ReceiveBuffered))
	ch <- gaugeOf(trRecvOutOfOrder, float64(st.ReceiveOutOfOrder))
	ch <- counterOf(trSendWaits, st.SendBudgetWaits)
	collectByLabel(ch, trRefused, st.Refused, refusalLabels)
	collectByLabel(ch, trDropped, st.DatagramsDropped, dropLabels)
	collectByLabel(ch, trClosedByLimit, st.ClosedByLimit, limitLabels)
	ch <- gaugeOf(trPrefixes, float64(st.Prefixes))
	ch <- gaugeOf(trPrefixBytes, float64(st.PrefixTableBytes))
	ch <- counterOf(trPanics, st.PanicsRecovered)
}

// collectByLabel exports a snapshot map keyed by one label: every known
// value, zeros included, then any other key the map has, in key order.
func collectByLabel(ch chan<- prometheus.Metric, d *prometheus.Desc, m map[string]uint64, known []string) {
	done := make(map[string]bool, len(known))
	for _, k := range known {
		done[k] = true
		ch <- counterOf(d, m[k], k)
	}
	for _, k := range sortedKeys(m) {
		if !done[k] {
			ch <- counterOf(d, m[k], k)
		}
	}
}
