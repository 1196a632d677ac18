package datapath

import (
	"time"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/offload/xdp"
)

// Stats counts what a datapath did.
type Stats struct {
	// Agent is the agent engine's verdict counts (complete up to the last
	// time each queue ran empty).
	Agent agent.Stats
	// Heartbeat is the agent's last heartbeat, the time the XDP program
	// measures staleness against; Paused says whether fault injection
	// paused the agent.
	Heartbeat time.Time
	Paused    bool
	// XDP is the program's per-reason packet counts.
	XDP xdp.Counters
	// PrefixRate is the agent's prefix table (Config.PrefixRate); the
	// zero value when the limit is off. PrefixWriteErrors counts buckets
	// the agent could not hand to the XDP program.
	PrefixRate        prefixrate.Stats
	PrefixWriteErrors uint64
	// FramesRX counts frames received on the AF_XDP sockets, FramesTX reply
	// frames queued for transmission.
	FramesRX uint64
	FramesTX uint64
	// Delivered counts datagrams handed to Config.Deliver, Forwarded
	// frames handed to Config.Forward.
	Delivered uint64
	Forwarded uint64
	// Unparsed counts frames that were not Ethernet/IP/UDP (dropped).
	Unparsed uint64
	// ReplyFailed counts replies that could not be built or queued
	// (dropped).
	ReplyFailed uint64
}
