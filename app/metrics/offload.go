package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/split"
	"github.com/turboretry/turboretry/offload/xdp"
)

// The integrated datapath's metrics (turboretry serve --offload xdp, and
// turboretry agent on its wire port).
var (
	agentPackets     = desc("turboretry_agent_packets_total", "Datagrams the Retry agent handled, by verdict and reason.", "verdict", "reason")
	agentEgress      = desc("turboretry_agent_egress_packets_total", "Host datagrams the agent observed, by whether a connection ID was admitted.", "result")
	agentCacheErrors = desc("turboretry_agent_cache_insert_errors_total", "Connection IDs the fast-path cache refused to admit.")
	agentHeartbeat   = desc("turboretry_agent_heartbeat_timestamp_seconds", "Time of the agent's last heartbeat.")
	agentPaused      = desc("turboretry_agent_paused", "Whether the agent is paused (1) by fault injection.")
	xdpPackets       = desc("turboretry_xdp_packets_total", "Packets the XDP fast path handled, by reason.", "reason")
	afxdpFrames      = desc("turboretry_afxdp_frames_total", "AF_XDP frames of the agent datapath, by direction and outcome.", "direction", "result")
	prefixPrefixes   = desc("turboretry_agent_prefix_rate_prefixes", "Source prefixes whose validated-Initial bucket the agent tracks.")
	prefixTokens     = desc("turboretry_agent_prefix_rate_tokens_total", "Validated Initials that took a token of their prefix's bucket, or found none.", "result")
	prefixEvictions  = desc("turboretry_agent_prefix_rate_evictions_total", "Prefix buckets forgotten to make room for another prefix.")
	prefixWriteErrs  = desc("turboretry_agent_prefix_rate_xdp_write_errors_total", "Emptied prefix buckets the agent could not hand to the XDP program.")

	datapathDescs = []*prometheus.Desc{agentPackets, agentEgress, agentCacheErrors, agentHeartbeat, agentPaused, xdpPackets, afxdpFrames,
		prefixPrefixes, prefixTokens, prefixEvictions, prefixWriteErrs}
)

// collectDatapath exports a datapath snapshot. Every agent and XDP reason
// is exported, zeros included, so series do not appear out of nowhere.
// xdpErr, the error reading the program's counters, replaces those with
// an invalid metric (the scrape reports it; the rest is served).
func collectDatapath(ch chan<- prometheus.Metric, s *datapath.Stats, xdpErr error) {
	for r := agent.Reason(1); int(r) < agent.NumReasons; r++ {
		ch <- counterOf(agentPackets, s.Agent.Packets[r], r.Verdict().String(), r.String())
	}
	ch <- counterOf(agentEgress, s.Agent.EgressLearned, "learned")
	ch <- counterOf(agentEgress, s.Agent.EgressIgnored, "ignored")
	ch <- counterOf(agentCacheErrors, s.Agent.CacheErrors)
	ch <- gaugeOf(prefixPrefixes, float64(s.PrefixRate.Prefixes))
	ch <- counterOf(prefixTokens, s.PrefixRate.Allowed, "taken")
	ch <- counterOf(prefixTokens, s.PrefixRate.Refused, "refused")
	ch <- counterOf(prefixEvictions, s.PrefixRate.Evictions)
	ch <- counterOf(prefixWriteErrs, s.PrefixWriteErrors)
	var hb float64
	if !s.Heartbeat.IsZero() {
		hb = float64(s.Heartbeat.UnixNano()) / 1e9
	}
	ch <- gaugeOf(agentHeartbeat, hb)
	paused := 0.0
	if s.Paused {
		paused = 1
	}
	ch <- gaugeOf(agentPaused, paused)
	if xdpErr != nil {
		ch <- prometheus.NewInvalidMetric(xdpPackets, xdpErr)
	} else {
		for r := range xdp.NumReasons {
			ch <- counterOf(xdpPackets, s.XDP[r], xdp.Reason(r).String())
		}
	}
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
		ch <- counterOf(afxdpFrames, c.n, c.dir, c.result)
	}
}

// The host's side of the split mode.
var (
	announcedCIDs     = desc("turboretry_split_announced_cids_total", "Connection IDs announced to the split-mode agent.")
	announceMessages  = desc("turboretry_split_announce_messages_total", "Announcement messages sent to the split-mode agent.")
	announceDropped   = desc("turboretry_split_announce_dropped_total", "Connection IDs not queued for announcement (queue full; the next re-announce carries them).")
	announceSendError = desc("turboretry_split_announce_send_errors_total", "Announcement messages the socket refused.")
	announceSkipped   = desc("turboretry_split_announce_skipped_total", "Connection IDs not announced because the agent's fast path verifies their MAC.")
)

// offloadCollector exports a running offload's snapshot.
type offloadCollector struct {
	stats func() (host.Stats, bool, error)
}

// NewOffloadCollector exports what stats returns: nothing while it says
// no offload runs (ok false), the datapath's metrics in host.ModeXDP, the
// announcer's in host.ModeSplit. An error (the XDP program's counters
// could not be read) fails that part of the scrape only.
func NewOffloadCollector(stats func() (st host.Stats, ok bool, err error)) prometheus.Collector {
	return offloadCollector{stats}
}

func (c offloadCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, datapathDescs...)
	describe(ch, announcedCIDs, announceMessages, announceDropped, announceSendError, announceSkipped)
}

func (c offloadCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok, err := c.stats()
	if !ok {
		return
	}
	switch st.Mode {
	case host.ModeXDP:
		collectDatapath(ch, &st.Datapath, err)
	case host.ModeSplit:
		a := st.Announcer
		ch <- counterOf(announcedCIDs, a.CIDs)
		ch <- counterOf(announceMessages, a.Messages)
		ch <- counterOf(announceDropped, a.Dropped)
		ch <- counterOf(announceSendError, a.SendErrors)
		ch <- counterOf(announceSkipped, a.Skipped)
	}
}

// The split-mode agent's own (turboretry agent).
var (
	splitHostFrames  = desc("turboretry_split_host_frames_total", "Validated Initials sent out of the host port, by result.", "result")
	splitAdmitFailed = desc("turboretry_split_admit_failed_total", "Announced connection IDs the fast-path cache refused.")
	controlMessages  = desc("turboretry_announce_messages_total", "Authentic connection ID announcements the agent accepted.")
	controlCIDs      = desc("turboretry_announce_cids_total", "Announced connection IDs admitted to the fast path.")
	controlRejected  = desc("turboretry_announce_rejected_total", "Control datagrams the agent rejected, by reason.", "reason")
)

// splitAgentCollector exports a split-mode agent's snapshot.
type splitAgentCollector struct {
	stats func() (split.Stats, error)
}

// NewSplitAgentCollector exports what stats returns (split.Agent.Stats):
// the wire port's datapath metrics, the host port's frames and the
// control channel's counters. An error (the XDP program's counters could
// not be read) fails that part of the scrape only.
func NewSplitAgentCollector(stats func() (split.Stats, error)) prometheus.Collector {
	return splitAgentCollector{stats}
}

func (c splitAgentCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, datapathDescs...)
	describe(ch, splitHostFrames, splitAdmitFailed, controlMessages, controlCIDs, controlRejected)
}

func (c splitAgentCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.stats()
	collectDatapath(ch, &s.Datapath, err)
	ch <- counterOf(splitHostFrames, s.HostSent, "sent")
	ch <- counterOf(splitHostFrames, s.HostFailed, "failed")
	ch <- counterOf(splitAdmitFailed, s.AdmitFailed)
	ch <- counterOf(controlMessages, s.Control.Messages)
	ch <- counterOf(controlCIDs, s.Control.CIDs)
	for r := announce.Reason(1); int(r) < announce.NumReasons; r++ {
		ch <- counterOf(controlRejected, s.Control.Rejected[r], r.String())
	}
}
