package xdp

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// MonotonicNow returns CLOCK_MONOTONIC in nanoseconds, the clock of
// bpf_ktime_get_ns and so of the heartbeat.
func MonotonicNow() uint64 {
	var ts unix.Timespec
	// CLOCK_MONOTONIC cannot fail on Linux with a valid pointer.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Beat records that the agent is alive at now, a MonotonicNow value. While
// the last beat is no older than Config.StaleAfter the program filters;
// afterwards, or after Beat(0), it passes everything (fail-open).
func (p *Program) Beat(now uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	if err := p.objs.TrHeartbeat.Update(uint32(0), now, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("xdp: writing the heartbeat: %w", err)
	}
	return nil
}
