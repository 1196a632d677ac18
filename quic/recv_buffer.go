package quic

import "sync"

// recvChunkSize is the unit of receive buffer storage, pooled like the
// send side's.
const recvChunkSize = 16 << 10

var recvChunkPool = sync.Pool{New: func() any { return new([recvChunkSize]byte) }}

// recvBuffer reassembles stream or CRYPTO data received out of order. The
// caller bounds the offsets (flow control, the CRYPTO buffer limit), which
// bounds the memory.
// TODO(internal/streambuf): replace with streambuf.RecvBuffer once it exists.
type recvBuffer struct {
	readOff   uint64 // next offset the reader gets
	chunkBase uint64 // offset of chunks[0][0], a multiple of recvChunkSize
	chunks    []*[recvChunkSize]byte
	have      rangeSet // received ranges, all at or above readOff
}

// insert stores the parts of data (at off) not yet read.
func (b *recvBuffer) insert(off uint64, data []byte) {
	b.releaseRead()
	end := off + uint64(len(data))
	if end <= b.readOff {
		return
	}
	if off < b.readOff {
		data = data[b.readOff-off:]
		off = b.readOff
	}
	b.have.add(off, end)
	// Retransmitted bytes are identical (RFC 9000 section 2.2), so
	// overwriting what arrived before is harmless.
	for len(data) > 0 {
		rel := off - b.chunkBase
		i, o := int(rel/recvChunkSize), int(rel%recvChunkSize)
		for len(b.chunks) <= i {
			b.chunks = append(b.chunks, nil)
		}
		if b.chunks[i] == nil {
			b.chunks[i] = recvChunkPool.Get().(*[recvChunkSize]byte)
		}
		n := copy(b.chunks[i][o:], data)
		data = data[n:]
		off += uint64(n)
	}
}

// contiguous returns how many bytes can be read at readOff now.
func (b *recvBuffer) contiguous() uint64 {
	if len(b.have) == 0 || b.have[0].start > b.readOff {
		return 0
	}
	return b.have[0].end - b.readOff
}

// peek returns the next contiguous bytes up to a chunk boundary.
func (b *recvBuffer) peek() []byte {
	n := b.contiguous()
	if n == 0 {
		return nil
	}
	rel := b.readOff - b.chunkBase
	i, o := rel/recvChunkSize, rel%recvChunkSize
	n = min(n, recvChunkSize-o)
	return b.chunks[i][o : o+n]
}

func (b *recvBuffer) advance(n int) {
	b.readOff += uint64(n)
	b.have.removeBelow(b.readOff)
}

// read copies contiguous data at readOff into p.
func (b *recvBuffer) read(p []byte) int {
	b.releaseRead()
	n := 0
	for n < len(p) {
		d := b.peek()
		if len(d) == 0 {
			break
		}
		k := copy(p[n:], d)
		n += k
		b.advance(k)
	}
	b.releaseRead()
	return n
}

// pop returns the next contiguous bytes without copying; they stay valid
// until the next call on b.
func (b *recvBuffer) pop() []byte {
	b.releaseRead()
	d := b.peek()
	b.advance(len(d))
	return d
}

// releaseRead returns the chunks below readOff to the pool.
func (b *recvBuffer) releaseRead() {
	for len(b.chunks) > 0 && b.chunkBase+recvChunkSize <= b.readOff {
		if b.chunks[0] != nil {
			recvChunkPool.Put(b.chunks[0])
		}
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
		b.chunkBase += recvChunkSize
	}
	if len(b.chunks) == 0 {
		b.chunkBase = b.readOff - b.readOff%recvChunkSize
	}
}

// discard drops everything buffered.
func (b *recvBuffer) discard() {
	for i, c := range b.chunks {
		if c != nil {
			recvChunkPool.Put(c)
		}
		b.chunks[i] = nil
	}
	b.chunks = nil
	b.have = nil
	b.chunkBase = b.readOff - b.readOff%recvChunkSize
}
