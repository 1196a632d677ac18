package xdp

import "fmt"

// Counters returns the per-reason packet counts summed over CPUs.
func (p *Program) Counters() (Counters, error) {
	var c Counters
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return c, errClosed
	}
	var perCPU []uint64
	for r := range NumReasons {
		if err := p.objs.TrCounters.Lookup(uint32(r), &perCPU); err != nil {
			return c, fmt.Errorf("xdp: reading counter %s: %w", Reason(r), err)
		}
		for _, n := range perCPU {
			c[r] += n
		}
	}
	return c, nil
}
