package streambuf

// span is the half-open byte range [start, end).
type span struct{ start, end uint64 }

// rangeSet is a sorted list of disjoint, non-adjacent spans. Its slice is
// reused, so once it has grown to its working size adding and removing
// spans allocates nothing. It enforces no limit itself: each owner decides
// what to do when len grows too large (see RecvBuffer and SendBuffer).
type rangeSet struct {
	s []span
}

func (r *rangeSet) len() int      { return len(r.s) }
func (r *rangeSet) empty() bool   { return len(r.s) == 0 }
func (r *rangeSet) first() span   { return r.s[0] }
func (r *rangeSet) clear()        { r.s = r.s[:0] }
func (r *rangeSet) spans() []span { return r.s }

// search returns the index of the first span whose end is >= off, i.e. the
// first span that overlaps or touches [off, ...).
func (r *rangeSet) search(off uint64) int {
	lo, hi := 0, len(r.s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.s[m].end < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// covers reports whether one span holds all of [start, end) (trivially
// true when the range is empty).
func (r *rangeSet) covers(start, end uint64) bool {
	if start >= end {
		return true
	}
	i := r.search(end)
	return i < len(r.s) && r.s[i].start <= start
}

// countAfterAdd returns len() after add(start, end), without changing r.
func (r *rangeSet) countAfterAdd(start, end uint64) int {
	if start >= end {
		return len(r.s)
	}
	i := r.search(start)
	j := i
	for j < len(r.s) && r.s[j].start <= end {
		j++
	}
	return len(r.s) + 1 - (j - i)
}

// add inserts [start, end), merging it with every span it overlaps or touches.
func (r *rangeSet) add(start, end uint64) {
	if start >= end {
		return
	}
	i := r.search(start)
	j := i
	for j < len(r.s) && r.s[j].start <= end {
		j++
	}
	if i == j { // no overlap: insert a new span at i
		r.s = append(r.s, span{})
		copy(r.s[i+1:], r.s[i:])
		r.s[i] = span{start, end}
		return
	}
	r.s[i] = span{min(start, r.s[i].start), max(end, r.s[j-1].end)}
	r.s = append(r.s[:i+1], r.s[j:]...)
}

// remove deletes [start, end) from the set, splitting a span if needed.
func (r *rangeSet) remove(start, end uint64) {
	if start >= end {
		return
	}
	i := r.search(start + 1) // first span ending after start
	for i < len(r.s) && r.s[i].start < end {
		sp := r.s[i]
		switch {
		case sp.start < start && sp.end > end: // hole in the middle: split
			r.s = append(r.s, span{})
			copy(r.s[i+1:], r.s[i:])
			r.s[i] = span{sp.start, start}
			r.s[i+1] = span{end, sp.end}
			return
		case sp.start < start:
			r.s[i].end = start
			i++
		case sp.end > end:
			r.s[i].start = end
			return
		default: // fully covered
			r.s = append(r.s[:i], r.s[i+1:]...)
		}
	}
}

// firstGap returns the first part of [start, end) not covered by the set,
// or ok == false if the set covers all of it.
func (r *rangeSet) firstGap(start, end uint64) (gs, ge uint64, ok bool) {
	i := r.search(start + 1)
	for ; i < len(r.s) && start < end; i++ {
		sp := r.s[i]
		if sp.start > start {
			return start, min(sp.start, end), true
		}
		start = max(start, sp.end)
	}
	if start < end {
		return start, end, true
	}
	return 0, 0, false
}

// smallestSpan returns the index of the span holding the fewest bytes.
func (r *rangeSet) smallestSpan() int {
	best := 0
	for i, sp := range r.s {
		if sp.end-sp.start < r.s[best].end-r.s[best].start {
			best = i
		}
	}
	return best
}

// mergeClosest joins the two neighbouring spans with the smallest gap
// between them, making the set one span shorter and coarser.
func (r *rangeSet) mergeClosest() {
	if len(r.s) < 2 {
		return
	}
	best := 0
	for i := 1; i+1 < len(r.s); i++ {
		if r.s[i+1].start-r.s[i].end < r.s[best+1].start-r.s[best].end {
			best = i
		}
	}
	r.s[best].end = r.s[best+1].end
	r.s = append(r.s[:best+1], r.s[best+2:]...)
}
