package streambuf

import "fmt"

// checkRecvLayout verifies a RecvBuffer's storage against its received
// ranges: segments sorted and disjoint, every unread received byte stored,
// the capacity counters right, and the memory bound: out-of-order data
// costs at most twice its bytes plus minSegmentCap per segment and one
// chunk started by bulk data near the read offset, and the whole buffer at
// most that plus the chunk holding the read offset.
func checkRecvLayout(b *RecvBuffer) error {
	st := &b.data
	held, ooo, oooSegs := 0, 0, 0
	contEnd := b.contiguousEnd()
	for i := range st.segs {
		s := &st.segs[i]
		if len(s.buf) == 0 || cap(s.buf) > ChunkSize || cap(s.buf)&(cap(s.buf)-1) != 0 || cap(s.buf) < minSegmentCap {
			return fmt.Errorf("segment %d at %d: len %d cap %d", i, s.off, len(s.buf), cap(s.buf))
		}
		if i > 0 && st.segs[i-1].end() > s.off {
			return fmt.Errorf("segment %d at %d overlaps the one before, ending at %d", i, s.off, st.segs[i-1].end())
		}
		first := max(s.off, b.readOffset)
		if s.end() <= b.readOffset {
			return fmt.Errorf("segment %d [%d, %d) is below the read offset %d", i, s.off, s.end(), b.readOffset)
		}
		// A chunk may have holes, even at the read offset.
		if !s.isChunk() && !b.received.covers(first, first+1) || !b.received.covers(s.end()-1, s.end()) {
			return fmt.Errorf("segment %d [%d, %d) cap %d does not start and end with received data (read offset %d, received %v)", i, s.off, s.end(), cap(s.buf), b.readOffset, b.received.spans())
		}
		if !s.isChunk() && !b.received.covers(first, s.end()) {
			return fmt.Errorf("segment %d [%d, %d) of cap %d has holes", i, s.off, s.end(), cap(s.buf))
		}
		held += cap(s.buf)
		if s.off >= contEnd {
			ooo += cap(s.buf)
			oooSegs++
		}
	}
	if held != st.held || ooo != st.outOfOrder {
		return fmt.Errorf("held %d, out of order %d; counted %d, %d", st.held, st.outOfOrder, held, ooo)
	}
	unread, oooBytes := 0, 0
	for _, sp := range b.received.spans() {
		unread += int(sp.end - sp.start)
		if sp.start >= contEnd {
			oooBytes += int(sp.end - sp.start)
		}
		// Every received byte is in the segment that spans its offset.
		for off := sp.start; off < sp.end; {
			j := st.after(off) - 1
			if j < 0 || st.segs[j].end() <= off {
				return fmt.Errorf("received byte %d is not stored", off)
			}
			off = st.segs[j].end()
		}
	}
	if ooo > 2*oooBytes+minSegmentCap*oooSegs+ChunkSize {
		return fmt.Errorf("%d bytes out of order in %d segments hold %d", oooBytes, oooSegs, ooo)
	}
	if held > 2*unread+minSegmentCap*len(st.segs)+2*ChunkSize {
		return fmt.Errorf("%d unread bytes in %d segments hold %d", unread, len(st.segs), held)
	}
	if n := b.Fragments(); b.released && n != 0 {
		return fmt.Errorf("released buffer has %d fragments", n)
	}
	return nil
}
