package xdp

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// prefixKey is the tr_prefixes key of prefix, the address masked as the
// program masks it.
func prefixKey(prefix netip.Prefix) fastpathTrPrefixKey {
	var k fastpathTrPrefixKey
	a := prefix.Masked().Addr()
	if a.Is4() {
		k.Family = 4
		b := a.As4()
		copy(k.Addr[:], b[:])
	} else {
		k.Family = 6
		k.Addr = a.As16()
	}
	return k
}

// LimitPrefix stores tat, a MonotonicNow value, as the theoretical arrival
// time of prefix's bucket (prefixrate): the program refuses the prefix's
// Initials with a token while tat > now + Config.PrefixRate.Tolerance().
// prefix must be one of Config.PrefixRate.PrefixOf's.
func (p *Program) LimitPrefix(prefix netip.Prefix, tat uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	if err := p.objs.TrPrefixes.Update(prefixKey(prefix), tat, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("xdp: writing the bucket of %v: %w", prefix, err)
	}
	return nil
}

// PrefixEmptied is a prefixrate.EmptyFunc for the agent
// (agent.Config.OnPrefixEmpty): it hands the prefix's bucket, emptied at
// now with arrival time tat (both in the agent's clock, Unix
// nanoseconds), to the program in its own clock. A failed write is
// counted (PrefixWriteErrors); the agent still refuses by itself.
func (p *Program) PrefixEmptied(prefix netip.Prefix, tat, now int64) {
	mono := p.monoNow() + uint64(max(tat-now, 0))
	if err := p.LimitPrefix(prefix, mono); err != nil {
		p.prefixWriteErrors.Add(1)
	}
}

// AttemptAdmitted is the agent's agent.Config.OnAttemptAdmitted: the
// connection attempt from prefix whose first DCID is dcid took its token,
// so the program lets its Initials through while the prefix is over (the
// other datagram of its ClientHello, retransmissions). A failed write is
// counted (PrefixWriteErrors); the agent still lets them through when
// they reach it (prefixrate.Refuse).
func (p *Program) AttemptAdmitted(prefix netip.Prefix, dcid []byte) {
	if len(dcid) > len(fastpathTrAttemptKey{}.Dcid) {
		return // no QUIC v1 DCID: the agent never admits one
	}
	k := fastpathTrAttemptKey{Prefix: prefixKey(prefix), DcidLen: uint32(len(dcid))}
	copy(k.Dcid[:], dcid)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if err := p.objs.TrAttempts.Update(k, uint64(0), ebpf.UpdateAny); err != nil {
		p.prefixWriteErrors.Add(1)
	}
}

// attemptEntries counts the attempts in the program's LRU map.
func (p *Program) attemptEntries() (int, error) {
	var (
		k fastpathTrAttemptKey
		v uint64
		n int
	)
	it := p.objs.TrAttempts.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n, it.Err()
}

// PrefixWriteErrors counts the buckets PrefixEmptied, and the attempts
// AttemptAdmitted, could not write.
func (p *Program) PrefixWriteErrors() uint64 { return p.prefixWriteErrors.Load() }

// monoNow is the program's clock for the prefix buckets: the test clock
// when one is set (setClockForTest), else MonotonicNow.
func (p *Program) monoNow() uint64 {
	if c := p.testClock.Load(); c != 0 {
		return c
	}
	return MonotonicNow()
}

// setClockForTest makes the program (and monoNow) read now as the time of
// the prefix buckets; 0 goes back to bpf_ktime_get_ns.
func (p *Program) setClockForTest(now uint64) error {
	p.testClock.Store(now)
	return p.objs.TrClock.Update(uint32(0), now, ebpf.UpdateAny)
}

// prefixEntries counts the prefixes in the program's LRU map.
func (p *Program) prefixEntries() (int, error) {
	var (
		k fastpathTrPrefixKey
		v uint64
		n int
	)
	it := p.objs.TrPrefixes.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n, it.Err()
}
