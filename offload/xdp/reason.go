package xdp

import "fmt"

// Reason says why the program gave a packet its verdict; it indexes the
// per-CPU counters (enum tr_xdp_reason in bpf/fastpath.bpf.c).
type Reason uint32

// Reasons, in the order of the C enum (the values come from its BTF).
const (
	// PassOther: not UDP to the server port; passed untouched.
	PassOther = Reason(fastpathTrXdpReasonTR_XDP_PASS_OTHER)
	// PassUnparsed: IPv4 fragment or IPv6 extension header; passed untouched.
	PassUnparsed = Reason(fastpathTrXdpReasonTR_XDP_PASS_UNPARSED)
	// PassFailOpen: heartbeat stale or unset; everything on the port passes.
	PassFailOpen = Reason(fastpathTrXdpReasonTR_XDP_PASS_FAIL_OPEN)
	// PassHit: Handshake, 0-RTT or short header whose DCID is in the cache.
	PassHit = Reason(fastpathTrXdpReasonTR_XDP_PASS_HIT)
	// AgentInitial: Initial redirected to the agent's AF_XDP socket.
	AgentInitial = Reason(fastpathTrXdpReasonTR_XDP_AGENT_INITIAL)
	// AgentVersion: long header of another QUIC version, redirected to the
	// agent (which answers with Version Negotiation).
	AgentVersion = Reason(fastpathTrXdpReasonTR_XDP_AGENT_VERSION)
	// PassNoSocket: meant for the agent, but its queue has no AF_XDP socket.
	PassNoSocket = Reason(fastpathTrXdpReasonTR_XDP_PASS_NO_SOCKET)
	// DropMiss: DCID not in the cache.
	DropMiss = Reason(fastpathTrXdpReasonTR_XDP_DROP_MISS)
	// DropCIDLen: long-header DCID length differs from the server's.
	DropCIDLen = Reason(fastpathTrXdpReasonTR_XDP_DROP_CID_LEN)
	// DropSmallInitial: Initial in a UDP payload under 1200 bytes.
	DropSmallInitial = Reason(fastpathTrXdpReasonTR_XDP_DROP_SMALL_INITIAL)
	// DropMalformed: too short to hold a DCID, or a bad UDP length.
	DropMalformed = Reason(fastpathTrXdpReasonTR_XDP_DROP_MALFORMED)
	// DropUnexpected: Retry or Version Negotiation sent to the server.
	DropUnexpected = Reason(fastpathTrXdpReasonTR_XDP_DROP_UNEXPECTED)
	// PassMAC: Handshake, 0-RTT or short header whose DCID is an
	// authenticated server ID (Config.IDs) whose MAC verifies.
	PassMAC = Reason(fastpathTrXdpReasonTR_XDP_PASS_MAC)
	// DropPrefixRate: an Initial with a token from a source prefix whose
	// bucket is empty (Config.PrefixRate with prefixrate.Drop).
	DropPrefixRate = Reason(fastpathTrXdpReasonTR_XDP_DROP_PREFIX_RATE)
	// AgentPrefixRate: the same with prefixrate.Refuse, redirected to the
	// agent, which answers CONNECTION_REFUSED without validating it.
	AgentPrefixRate = Reason(fastpathTrXdpReasonTR_XDP_AGENT_PREFIX_RATE)

	// NumReasons is the number of reasons (and of counters).
	NumReasons = int(fastpathTrXdpReasonTR_XDP_NREASONS)
)

var reasonNames = [NumReasons]string{
	PassOther:        "pass_other",
	PassUnparsed:     "pass_unparsed",
	PassFailOpen:     "pass_fail_open",
	PassHit:          "pass_hit",
	AgentInitial:     "agent_initial",
	AgentVersion:     "agent_version",
	PassNoSocket:     "pass_no_socket",
	DropMiss:         "drop_miss",
	DropCIDLen:       "drop_cid_len",
	DropSmallInitial: "drop_small_initial",
	DropMalformed:    "drop_malformed",
	DropUnexpected:   "drop_unexpected",
	PassMAC:          "pass_mac",
	DropPrefixRate:   "drop_prefix_rate",
	AgentPrefixRate:  "agent_prefix_rate",
}

// String returns the reason's metric-style name.
func (r Reason) String() string {
	if int(r) < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint32(r))
}

// Counters holds the packet count of each Reason, summed over CPUs.
type Counters [NumReasons]uint64

// Dropped returns the number of packets the program dropped.
func (c Counters) Dropped() uint64 {
	return c[DropMiss] + c[DropCIDLen] + c[DropSmallInitial] + c[DropMalformed] + c[DropUnexpected] + c[DropPrefixRate]
}
