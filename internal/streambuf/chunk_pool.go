package streambuf

import "sync"

// ChunkSize is the size of the pooled blocks stream data is copied into.
// 16 KiB holds a dozen full-size packets' worth of data, so per-chunk
// bookkeeping stays small while an idle stream pins little memory.
const ChunkSize = 16 << 10

type chunk = [ChunkSize]byte

// chunkPool hands out *chunk values; storing pointers keeps Get and Put
// free of allocations.
var chunkPool = sync.Pool{New: func() any { return new(chunk) }}

func getChunk() *chunk { return chunkPool.Get().(*chunk) }

func putChunk(c *chunk) { chunkPool.Put(c) }

// chunkList is a run of chunks covering [base, base+len*ChunkSize). Entries
// may be nil where no data has been stored yet (holes in received data).
type chunkList struct {
	base   uint64
	chunks []*chunk
	count  int // non-nil entries, i.e. chunks taken from the pool
}

// at returns the chunk holding offset off (>= base) and the index of off in
// it, taking a chunk from the pool when alloc is set and none is there yet.
func (l *chunkList) at(off uint64, alloc bool) (*chunk, int) {
	i := int((off - l.base) / ChunkSize)
	for len(l.chunks) <= i {
		l.chunks = append(l.chunks, nil)
	}
	c := l.chunks[i]
	if c == nil && alloc {
		c = getChunk()
		l.chunks[i] = c
		l.count++
	}
	return c, int((off - l.base) % ChunkSize)
}

// releaseBelow returns the chunks that lie entirely below off to the pool.
func (l *chunkList) releaseBelow(off uint64) {
	if off < l.base {
		return
	}
	n := int(min((off-l.base)/ChunkSize, uint64(len(l.chunks))))
	if n == 0 {
		return
	}
	for i := range n {
		if l.chunks[i] != nil {
			putChunk(l.chunks[i])
			l.count--
		}
	}
	m := copy(l.chunks, l.chunks[n:])
	clear(l.chunks[m:])
	l.chunks = l.chunks[:m]
	l.base += uint64(n) * ChunkSize
}

// releaseAll returns every chunk and restarts the list at base.
func (l *chunkList) releaseAll(base uint64) {
	for i, c := range l.chunks {
		if c != nil {
			putChunk(c)
			l.chunks[i] = nil
		}
	}
	l.chunks = l.chunks[:0]
	l.count = 0
	l.base = base
}

// releaseFrom returns the chunks that lie entirely at or above off to the
// pool.
func (l *chunkList) releaseFrom(off uint64) {
	keep := len(l.chunks)
	if off >= l.base {
		keep = int(min((off-l.base+ChunkSize-1)/ChunkSize, uint64(keep)))
	} else {
		keep = 0
	}
	for i := keep; i < len(l.chunks); i++ {
		if l.chunks[i] != nil {
			putChunk(l.chunks[i])
			l.chunks[i] = nil
			l.count--
		}
	}
	l.chunks = l.chunks[:keep]
}

// write copies p to offset off, which must be >= base.
func (l *chunkList) write(off uint64, p []byte) {
	for len(p) > 0 {
		c, i := l.at(off, true)
		n := copy(c[i:], p)
		p = p[n:]
		off += uint64(n)
	}
}

// read copies len(p) bytes stored at off into p.
func (l *chunkList) read(off uint64, p []byte) {
	for len(p) > 0 {
		c, i := l.at(off, false)
		n := copy(p, c[i:])
		p = p[n:]
		off += uint64(n)
	}
}
