package live

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/offload/flood"
)

// ErrNamespace is returned by Run on a thread outside the network
// namespace the Generator was made in.
var ErrNamespace = errors.New("live: Run must be called on a thread in the network namespace New was called in")

// Stats summarizes a run.
type Stats struct {
	flood.Stats
	// CPU is the sending thread's CPU time (user and system) during the
	// run: the program, the page pool and the redirect into the veth.
	CPU  time.Duration `json:"-"`
	CPUS float64       `json:"cpu_s"`
	// Calls counts BPF_PROG_RUN calls.
	Calls uint64 `json:"calls"`
	// Delivered and Refused are the interface's redirected frames taken
	// into its peer's receive ring and refused (ring full) during the run;
	// HaveXmit is false when the interface has no such counters. The veth
	// updates them without atomics: with several sending CPUs (Config.CPUs)
	// on one receive queue they can undercount.
	Delivered uint64 `json:"delivered"`
	Refused   uint64 `json:"refused"`
	HaveXmit  bool   `json:"have_xmit"`

	err error // what Run returns
}

// XmitStats are a veth's counters of redirected frames (its ethtool
// statistics tx_queue_N_xdp_xmit and tx_queue_N_xdp_xmit_errors, summed
// over queues): the frames its peer took into its receive ring, and those
// refused because that ring was full (or the peer had neither an XDP
// program nor GRO).
type XmitStats struct {
	Xmit, Errors uint64
}
