package quic

import "sync"

// sendChunkSize is the unit of send buffer storage: chunks are pooled, so a
// long transfer reuses a few of them instead of growing one slice.
const sendChunkSize = 32 << 10

var sendChunkPool = sync.Pool{New: func() any { return new([sendChunkSize]byte) }}

// sendBuffer holds the data of a stream or CRYPTO stream from the first
// unacknowledged byte on, and tracks what to send and retransmit.
// TODO(internal/streambuf): replace with streambuf.SendBuffer once it exists.
type sendBuffer struct {
	base      uint64 // everything below is acknowledged
	chunkBase uint64 // offset of chunks[0][0], a multiple of sendChunkSize
	endOff    uint64 // offset after the last written byte
	chunks    []*[sendChunkSize]byte
	next      uint64   // next never-sent offset
	lost      rangeSet // sent ranges to retransmit
	acked     rangeSet // acknowledged ranges above base

	fin        bool // the writer closed the stream: final size is end()
	finSent    bool
	finAcked   bool
	finPending bool // the FIN was lost and must be sent again
}

// newSendBufferAt returns an empty buffer whose next byte is at off (after
// a reset, nothing below off is ever sent again).
func newSendBufferAt(off uint64) sendBuffer {
	return sendBuffer{base: off, chunkBase: off - off%sendChunkSize, endOff: off, next: off}
}

func (b *sendBuffer) end() uint64 { return b.endOff }

// buffered is how many bytes are held (sent or not, not yet acknowledged).
func (b *sendBuffer) buffered() uint64 { return b.endOff - b.base }

func (b *sendBuffer) write(p []byte) {
	for len(p) > 0 {
		used := int(b.endOff - b.chunkBase - uint64(len(b.chunks)-1)*sendChunkSize)
		if len(b.chunks) == 0 || used == sendChunkSize {
			b.chunks = append(b.chunks, sendChunkPool.Get().(*[sendChunkSize]byte))
			used = int((b.endOff - b.chunkBase) % sendChunkSize)
		}
		n := copy(b.chunks[len(b.chunks)-1][used:], p)
		p = p[n:]
		b.endOff += uint64(n)
	}
}

// slice returns up to n bytes at off without crossing a chunk boundary.
func (b *sendBuffer) slice(off, n uint64) []byte {
	rel := off - b.chunkBase
	i, o := rel/sendChunkSize, rel%sendChunkSize
	n = min(n, sendChunkSize-o, b.endOff-off)
	return b.chunks[i][o : o+n]
}

// unsent is how many bytes were never sent.
func (b *sendBuffer) unsent() uint64 { return b.endOff - b.next }

// hasData reports whether a frame is waiting: lost data, new data or a FIN.
func (b *sendBuffer) hasData() bool {
	return len(b.lost) > 0 || b.next < b.endOff || b.finToSend()
}

func (b *sendBuffer) finToSend() bool {
	return b.fin && (!b.finSent || b.finPending) && !b.finAcked
}

// popLost returns up to maxLen lost bytes to retransmit.
func (b *sendBuffer) popLost(maxLen uint64) (off uint64, data []byte, ok bool) {
	for len(b.lost) > 0 && maxLen > 0 {
		r := b.lost[0]
		start, end, gap := b.acked.firstGap(max(r.start, b.base), r.end)
		if !gap {
			b.lost = b.lost[1:]
			continue
		}
		data = b.slice(start, min(end-start, maxLen))
		end = start + uint64(len(data))
		// Everything in the front range below end is now handled.
		if end >= r.end {
			b.lost = b.lost[1:]
		} else {
			b.lost[0].start = end
		}
		return start, data, true
	}
	return 0, nil, false
}

// popNew returns up to maxLen never-sent bytes.
func (b *sendBuffer) popNew(maxLen uint64) (off uint64, data []byte) {
	off = b.next
	if maxLen == 0 || off == b.endOff {
		return off, nil
	}
	data = b.slice(off, maxLen)
	b.next += uint64(len(data))
	return off, data
}

// onAcked records that [off, off+n) arrived; with fin the FIN did too.
func (b *sendBuffer) onAcked(off, n uint64, fin bool) {
	if fin {
		b.finAcked = true
		b.finPending = false
	}
	if n == 0 || off+n <= b.base {
		return
	}
	off, n = max(off, b.base), off+n-max(off, b.base)
	b.acked.add(off, off+n)
	if len(b.acked) > 0 && b.acked[0].start <= b.base {
		b.base = b.acked[0].end
		b.acked = b.acked[1:]
		b.lost.removeBelow(b.base)
		// Release the chunks that hold only acknowledged bytes.
		for len(b.chunks) > 0 && b.chunkBase+sendChunkSize <= b.base {
			sendChunkPool.Put(b.chunks[0])
			b.chunks[0] = nil
			b.chunks = b.chunks[1:]
			b.chunkBase += sendChunkSize
		}
	}
}

// onLost queues [off, off+n) for retransmission.
func (b *sendBuffer) onLost(off, n uint64, fin bool) {
	if fin && !b.finAcked {
		b.finPending = true
	}
	if off+n <= b.base || n == 0 {
		return
	}
	b.lost.add(max(off, b.base), off+n)
}

// allAcked reports whether every byte and the FIN were acknowledged.
func (b *sendBuffer) allAcked() bool {
	return b.fin && b.finAcked && b.base == b.endOff
}

// requeueAll marks everything sent but unacknowledged as lost, for probes
// and Retry.
func (b *sendBuffer) requeueAll() {
	for off := b.base; off < b.next; {
		s, e, ok := b.acked.firstGap(off, b.next)
		if !ok {
			break
		}
		b.lost.add(s, e)
		off = e
	}
}

// release returns the chunks to the pool; the buffer must not be used after.
func (b *sendBuffer) release() {
	for i, c := range b.chunks {
		sendChunkPool.Put(c)
		b.chunks[i] = nil
	}
	b.chunks = nil
}
