package agent

import "sync/atomic"

// publishEvery is how many counted events a worker accumulates in plain
// counters before copying them to its published snapshot.
const publishEvery = 64

// counters are a worker's counts. The worker increments plain fields (no
// atomic read-modify-write on the hot path) and every publishEvery events,
// or on Flush, stores them into atomics that Engine.Stats reads. Only the
// owning worker ever writes either set, so there is no race.
type counters struct {
	packets       [NumReasons]uint64
	egressLearned uint64
	egressIgnored uint64
	cacheErrors   uint64
	pending       int

	pubPackets       [NumReasons]atomic.Uint64
	pubEgressLearned atomic.Uint64
	pubEgressIgnored atomic.Uint64
	pubCacheErrors   atomic.Uint64
}

func (c *counters) count(r Reason) {
	c.packets[r]++
	c.maybePublish()
}

func (c *counters) maybePublish() {
	c.pending++
	if c.pending >= publishEvery {
		c.publish()
	}
}

func (c *counters) publish() {
	c.pending = 0
	for i := range c.packets {
		c.pubPackets[i].Store(c.packets[i])
	}
	c.pubEgressLearned.Store(c.egressLearned)
	c.pubEgressIgnored.Store(c.egressIgnored)
	c.pubCacheErrors.Store(c.cacheErrors)
}

// admit inserts cid into the fast-path cache and reports whether the cache
// took it; refusals are counted (CacheErrors), never fatal.
func (w *Worker) admit(cid []byte) bool {
	if err := w.cache.Insert(cid); err != nil {
		w.cacheErrors++
		return false
	}
	return true
}

// Flush publishes the worker's counters now, so that Engine.Stats sees all
// of them; otherwise up to 63 recent events may be missing. A datapath
// calls it when its queue runs empty. Call it from the worker's goroutine.
func (w *Worker) Flush() { w.publish() }

// Stats returns the worker's own counters, complete up to now. Call it from
// the worker's goroutine.
func (w *Worker) Stats() Stats {
	return Stats{Packets: w.packets, EgressLearned: w.egressLearned, EgressIgnored: w.egressIgnored, CacheErrors: w.cacheErrors}
}

// Stats counts what an engine or worker did.
type Stats struct {
	// Packets counts datagrams by the reason of their verdict.
	Packets [NumReasons]uint64
	// EgressLearned counts host datagrams whose SCID was admitted;
	// EgressIgnored the other host datagrams ObserveEgress saw.
	EgressLearned uint64
	EgressIgnored uint64
	// CacheErrors counts connection IDs the fast-path cache refused (for
	// offload/fastpath: a CID not of its configured length).
	CacheErrors uint64
}

// Verdicts sums Packets by verdict.
func (s *Stats) Verdicts() (drop, sendReply, forward uint64) {
	for r, n := range s.Packets {
		switch Reason(r).Verdict() {
		case Drop:
			drop += n
		case SendReply:
			sendReply += n
		case Forward:
			forward += n
		}
	}
	return drop, sendReply, forward
}

// Stats sums the counters the workers have published (see Worker.Flush).
// It is safe to call from any goroutine while workers run.
func (e *Engine) Stats() Stats {
	var s Stats
	for _, w := range e.workers {
		for i := range s.Packets {
			s.Packets[i] += w.pubPackets[i].Load()
		}
		s.EgressLearned += w.pubEgressLearned.Load()
		s.EgressIgnored += w.pubEgressIgnored.Load()
		s.CacheErrors += w.pubCacheErrors.Load()
	}
	return s
}
