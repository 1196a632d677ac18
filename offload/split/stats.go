package split

import (
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
