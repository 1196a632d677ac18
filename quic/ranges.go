package quic

// byteRange is the half-open interval [start, end) of stream offsets.
type byteRange struct{ start, end uint64 }

// rangeSet is a sorted list of disjoint, non-adjacent byte ranges.
// TODO(internal/streambuf): replace with the shared implementation once it exists.
type rangeSet []byteRange

// add inserts [start, end), merging overlapping and adjacent ranges.
func (s *rangeSet) add(start, end uint64) {
	if start >= end {
		return
	}
	r := *s
	// Find the first range that ends at or after start.
	i := 0
	for i < len(r) && r[i].end < start {
		i++
	}
	j := i
	for j < len(r) && r[j].start <= end {
		start = min(start, r[j].start)
		end = max(end, r[j].end)
		j++
	}
	if i == j {
		r = append(r, byteRange{})
		copy(r[i+1:], r[i:])
		r[i] = byteRange{start, end}
	} else {
		r[i] = byteRange{start, end}
		r = append(r[:i+1], r[j:]...)
	}
	*s = r
}

// removeBelow drops everything below off.
func (s *rangeSet) removeBelow(off uint64) {
	r := *s
	k := 0
	for k < len(r) && r[k].end <= off {
		k++
	}
	r = r[k:]
	if len(r) > 0 && r[0].start < off {
		r[0].start = off
	}
	*s = r
}

// firstGap returns the first sub-range of [start, end) not covered by s.
func (s rangeSet) firstGap(start, end uint64) (uint64, uint64, bool) {
	for _, r := range s {
		if r.end <= start {
			continue
		}
		if r.start > start {
			return start, min(end, r.start), start < end
		}
		start = r.end
		if start >= end {
			return 0, 0, false
		}
	}
	return start, end, start < end
}
