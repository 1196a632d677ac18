package streambuf

import "unsafe"

// The receive side stores data in segments allocated for the bytes that
// actually arrived, so data scattered over a large window costs memory in
// proportion to what was received, not a chunk per fragment:
//
//   - a fragment starts in a buffer of the smallest power-of-two size that
//     holds it (at least minSegmentCap) and doubles as adjacent data
//     arrives, so a segment's capacity is at most twice its bytes plus
//     minSegmentCap;
//   - a segment never grows beyond ChunkSize; data that continues a chunk
//     full of received data, and bulk data (bulkFrameSize or more) arriving
//     within a chunk of the read offset, go straight into pooled chunks, so
//     in-order and lightly reordered transfers allocate nothing in steady
//     state. A peer can make a stream hold at most one chunk that way for
//     bulkFrameSize bytes of data;
//   - only full-size chunks may hold holes: data that lands within the room
//     of a chunk already allocated is written in place, costing nothing.
//
// Chunks go back to the pool only when the reader consumed them; buffers
// freed by Release, merges and growth are left to the garbage collector, so
// the pool holds no more than in-order traffic recycles.

const (
	// minSegmentCap is the smallest buffer a fragment gets.
	minSegmentCap = 16
	// bulkFrameSize: data at least this large arriving at the read offset
	// starts a pooled chunk at once instead of a small buffer.
	bulkFrameSize = 1024
	// keptSlots is the bookkeeping slice capacity a buffer keeps however
	// few fragments it holds; larger ones shrink as fragments go (shrunk).
	keptSlots = 16

	segmentBytes = int(unsafe.Sizeof(segment{}))
	spanBytes    = int(unsafe.Sizeof(span{}))
)

// segment holds the data received at [off, off+len(buf)); cap(buf) is its
// whole allocation. Its first and last bytes are received data; bytes in
// between may be holes (not received yet) only in a full-size chunk.
type segment struct {
	off uint64
	buf []byte
}

func (s *segment) end() uint64   { return s.off + uint64(len(s.buf)) }
func (s *segment) limit() uint64 { return s.off + uint64(cap(s.buf)) }
func (s *segment) isChunk() bool { return cap(s.buf) == ChunkSize }

// recvStore is the sorted, disjoint list of segments behind a RecvBuffer,
// with the capacity it holds split at split (the end of the data
// contiguous with the read offset): held counts all of it, outOfOrder the
// segments at or beyond split.
type recvStore struct {
	segs       []segment
	held       int
	outOfOrder int
	split      uint64
}

// account records a change of delta bytes of capacity in the segment at off.
func (st *recvStore) account(off uint64, delta int) {
	st.held += delta
	if off >= st.split {
		st.outOfOrder += delta
	}
}

// segmentBuf returns an empty buffer of capacity at least n: a pooled chunk
// for n >= ChunkSize/2, else the next power of two.
func segmentBuf(n int) []byte {
	c := minSegmentCap
	for c < n {
		c <<= 1
	}
	if c >= ChunkSize {
		return getChunk()[:0]
	}
	return make([]byte, 0, c)
}

// after returns the index of the first segment starting beyond off.
func (st *recvStore) after(off uint64) int {
	lo, hi := 0, len(st.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if st.segs[m].off <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// write stores p at off; none of [off, off+len(p)) may be held yet.
// readOffset and received are the RecvBuffer's: bulk data at the read
// offset starts a chunk, so does data continuing a chunk that is full of
// received data, and a segment holding the read offset drops the bytes
// below it when it grows.
func (st *recvStore) write(off uint64, p []byte, readOffset uint64, received *rangeSet) {
	last := -1
	start := off
	for len(p) > 0 {
		i := st.after(off)
		lim := off + uint64(len(p))
		if i < len(st.segs) {
			lim = min(lim, st.segs[i].off)
		}
		if i > 0 {
			s := &st.segs[i-1]
			if off < s.limit() && (off <= s.end() || s.isChunk()) {
				// Room (or a hole) in a segment already allocated.
				end := min(lim, s.limit())
				pos := int(off - s.off)
				if e := int(end - s.off); e > len(s.buf) {
					s.buf = s.buf[:e]
				}
				n := copy(s.buf[pos:], p[:end-off])
				p, off, last = p[n:], off+uint64(n), i-1
				continue
			}
			if off == s.end() && !s.isChunk() {
				st.grow(i-1, int(lim-s.off), readOffset, false)
				continue
			}
		}
		n := int(min(lim-off, ChunkSize))
		segOff, size := off, n
		switch {
		case i == 0 && n >= bulkFrameSize && off-readOffset < ChunkSize:
			// Bulk data at or just beyond the read offset (reordered
			// packets): a chunk from the read offset, which the data
			// before it will fill in place.
			segOff, size = readOffset, ChunkSize
			n = int(min(uint64(n), ChunkSize-(off-readOffset)))
		case i > 0 && st.segs[i-1].end() == off && st.segs[i-1].isChunk() &&
			received.covers(max(st.segs[i-1].off, readOffset), start):
			size = ChunkSize // bulk: continue in whole chunks
		}
		buf := segmentBuf(size)[:int(off-segOff)+n]
		copy(buf[off-segOff:], p[:n])
		st.segs = append(st.segs, segment{})
		copy(st.segs[i+1:], st.segs[i:])
		st.segs[i] = segment{off: segOff, buf: buf}
		st.account(segOff, cap(buf))
		p, off, last = p[n:], off+uint64(n), i
	}
	if last >= 0 {
		st.mergeNext(last, readOffset)
	}
}

// grow moves segment i into a buffer that holds need bytes from its start
// (at most ChunkSize), dropping data below readOffset first; toChunk asks
// for a full chunk whatever need is.
func (st *recvStore) grow(i, need int, readOffset uint64, toChunk bool) {
	s := &st.segs[i]
	oldCap := cap(s.buf)
	if s.off < readOffset {
		k := int(readOffset - s.off)
		s.buf, s.off, need = s.buf[k:], readOffset, need-k
	}
	size := need // a full segment: at least doubles
	if toChunk {
		size = ChunkSize
	}
	buf := segmentBuf(min(size, ChunkSize))[:len(s.buf)]
	copy(buf, s.buf)
	st.account(s.off, cap(buf)-oldCap)
	s.buf = buf
}

// mergeNext folds the segments following segment i into it while they fit
// within a chunk from its start: in place when they lie within its
// capacity, else by growing it when they continue it. A run of received
// data thus never consists of many small segments.
func (st *recvStore) mergeNext(i int, readOffset uint64) {
	for i+1 < len(st.segs) {
		s, q := &st.segs[i], st.segs[i+1]
		switch {
		case q.end() <= s.limit() && (q.off == s.end() || s.isChunk()):
		case q.off == s.end() && !s.isChunk() && q.end()-s.off <= ChunkSize:
			st.grow(i, int(q.end()-s.off), readOffset, q.isChunk())
			s = &st.segs[i]
		default:
			return
		}
		pos := int(q.off - s.off)
		s.buf = s.buf[:pos+len(q.buf)]
		copy(s.buf[pos:], q.buf)
		st.account(q.off, -cap(q.buf))
		st.segs = append(st.segs[:i+1], st.segs[i+2:]...)
	}
}

// segmentAt returns the segment holding the received byte at off.
func (st *recvStore) segmentAt(off uint64) *segment { return &st.segs[st.after(off)-1] }

// read copies len(p) received bytes stored from off into p.
func (st *recvStore) read(off uint64, p []byte) {
	i := st.after(off) - 1
	for len(p) > 0 {
		s := &st.segs[i]
		n := copy(p, s.buf[off-s.off:])
		p, off = p[n:], off+uint64(n)
		i++
	}
}

// view returns the stored bytes from off up to end or the end of off's
// segment, whichever comes first.
func (st *recvStore) view(off, end uint64) []byte {
	s := st.segmentAt(off)
	return s.buf[off-s.off : min(uint64(len(s.buf)), end-s.off)]
}

// releaseBelow frees the segments that lie entirely below off, giving
// chunks back to the pool: the reader consumed them.
func (st *recvStore) releaseBelow(off uint64) {
	n := 0
	for n < len(st.segs) && st.segs[n].end() <= off {
		s := &st.segs[n]
		st.account(s.off, -cap(s.buf))
		if s.isChunk() {
			putChunk((*chunk)(s.buf[:ChunkSize]))
		}
		n++
	}
	if n == 0 {
		return
	}
	m := copy(st.segs, st.segs[n:])
	clear(st.segs[m:])
	st.segs = st.segs[:m]
}

// advanceSplit moves the contiguous end to split, counting the segments
// it passes as no longer out of order.
func (st *recvStore) advanceSplit(split uint64) {
	if split <= st.split {
		return
	}
	i := 0
	if st.split > 0 {
		i = st.after(st.split - 1)
	}
	for ; i < len(st.segs) && st.segs[i].off < split; i++ {
		st.outOfOrder -= cap(st.segs[i].buf)
	}
	st.split = split
}

// releaseAll drops every segment for the garbage collector (a reset or
// closed stream: nothing here is recycled) and restarts at split.
func (st *recvStore) releaseAll(split uint64) {
	st.segs = nil
	st.held, st.outOfOrder, st.split = 0, 0, split
}

// bookkeeping returns the bytes held by the segment list itself.
func (st *recvStore) bookkeeping() int { return cap(st.segs) * segmentBytes }
