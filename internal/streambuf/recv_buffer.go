package streambuf

import "github.com/turboretry/turboretry/internal/wire"

// MaxRecvGaps bounds how many separate runs of received-but-unread data a
// RecvBuffer tracks. Honest peers leave a handful of holes (one per lost
// packet in flight); beyond this Push fails with ErrTooFragmented.
const MaxRecvGaps = 1024

// RecvBuffer reassembles the receive side of a stream or CRYPTO stream.
// Data is copied out of the caller's packet buffer into buffers sized for
// what arrived (pooled chunks for in-order bulk data, see recv_store.go)
// and handed out in order by Read, or by Peek and Skip without copying.
// Footprint reports the memory held, in bytes: a peer scattering small
// frames over the window makes it hold about what it sent, plus a small
// constant per fragment (Fragments), not a chunk per frame.
//
// Overlapping data is kept as first received: bytes already held are never
// overwritten, so a peer resending different bytes for the same offsets
// cannot change data a reader may already have peeked (RFC 9000 section 2.2
// allows either choice).
//
// A RecvBuffer is not safe for concurrent use.
type RecvBuffer struct {
	maxBuffer  uint64
	readOffset uint64
	highest    uint64 // highest offset + length seen in any Push
	finalSize  uint64
	finKnown   bool
	released   bool
	received   rangeSet // data held, all at or above readOffset
	data       recvStore
}

// NewRecvBuffer returns a buffer that accepts data up to maxBuffer bytes
// beyond its read offset. The connection passes its receive window (or, for
// CRYPTO streams, the amount of handshake data it is willing to buffer).
// Memory held is at most about twice maxBuffer plus a constant per fragment
// (at most MaxRecvGaps of them), so maxBuffer must be a real bound.
func NewRecvBuffer(maxBuffer uint64) *RecvBuffer {
	return &RecvBuffer{maxBuffer: maxBuffer}
}

// SetMaxBuffer changes the bound given to NewRecvBuffer, typically when the
// connection grows the stream's flow-control window.
func (b *RecvBuffer) SetMaxBuffer(maxBuffer uint64) { b.maxBuffer = maxBuffer }

// Push stores data received at offset; fin marks offset+len(data) as the
// final size. Duplicates and data below the read offset are ignored. The
// data slice is not retained. On error nothing is changed and the
// connection must close with the error's Code (see the Err values).
func (b *RecvBuffer) Push(offset uint64, data []byte, fin bool) error {
	if offset > wire.MaxVarint || uint64(len(data)) > wire.MaxVarint-offset {
		return ErrOffsetTooLarge
	}
	end := offset + uint64(len(data))
	if b.finKnown && (end > b.finalSize || fin && end != b.finalSize) {
		return ErrFinalSize
	}
	if fin && !b.finKnown && end < b.highest {
		return ErrFinalSize
	}
	if end > b.readOffset && end-b.readOffset > b.maxBuffer {
		return ErrBufferExceeded
	}
	start := max(offset, b.readOffset)
	if start < end && !b.released && b.received.countAfterAdd(start, end) > MaxRecvGaps {
		return ErrTooFragmented
	}

	b.highest = max(b.highest, end)
	if fin {
		b.finalSize, b.finKnown = end, true
	}
	if start >= end || b.released {
		return nil
	}
	for start < end {
		gs, ge, ok := b.received.firstGap(start, end)
		if !ok {
			break
		}
		b.data.write(gs, data[gs-offset:ge-offset], b.readOffset, &b.received)
		start = ge
	}
	b.received.add(max(offset, b.readOffset), end)
	b.data.advanceSplit(b.contiguousEnd())
	b.shrinkBookkeeping()
	return nil
}

// shrinkBookkeeping gives back the segment and range lists' room once a
// burst of fragments has merged away or been read: when they hold more
// memory than the data does and are under a quarter full. Lists a bulk
// transfer grew stay as long as they hold less than its data, so a reader
// that lags and catches up does not make them shrink and grow again.
func (b *RecvBuffer) shrinkBookkeeping() {
	if b.bookkeeping() <= max(b.data.held, keptSlots*(segmentBytes+spanBytes)) {
		return
	}
	b.data.segs = shrunk(b.data.segs)
	b.received.s = shrunk(b.received.s)
}

func (b *RecvBuffer) bookkeeping() int { return b.data.bookkeeping() + cap(b.received.s)*spanBytes }

// shrunk returns s in a smaller array when it is under a quarter full. A
// shrink copies len elements after at least 3*len removals, so it costs
// O(1) amortized.
func shrunk[T any](s []T) []T {
	if cap(s) <= keptSlots || len(s) >= cap(s)/4 {
		return s
	}
	return append(make([]T, 0, max(2*len(s), keptSlots)), s...)
}

// contiguousEnd returns the end of the data readable from the read offset.
func (b *RecvBuffer) contiguousEnd() uint64 {
	if b.received.empty() || b.received.first().start > b.readOffset {
		return b.readOffset
	}
	return b.received.first().end
}

// Readable returns how many contiguous bytes are ready at the read offset.
func (b *RecvBuffer) Readable() int {
	if b.received.empty() {
		return 0
	}
	sp := b.received.first()
	if sp.start > b.readOffset {
		return 0
	}
	return int(min(sp.end-b.readOffset, uint64(maxInt)))
}

const maxInt = int(^uint(0) >> 1)

// Read copies contiguous data from the read offset into p and advances the
// read offset. fin reports that the reader has now consumed everything up to
// the final size (Done).
func (b *RecvBuffer) Read(p []byte) (n int, fin bool) {
	n = min(len(p), b.Readable())
	if n > 0 {
		b.data.read(b.readOffset, p[:n])
		b.advance(uint64(n))
	}
	return n, b.Done()
}

// Peek returns the next contiguous bytes at the read offset without copying,
// at most up to the end of the buffer holding them (at most ChunkSize
// bytes); call again after Skip for the rest. The slice stays valid until the next Skip, Read or Release.
func (b *RecvBuffer) Peek() []byte {
	n := b.Readable()
	if n == 0 {
		return nil
	}
	return b.data.view(b.readOffset, b.readOffset+uint64(n))
}

// CopyAt copies contiguous data from the read offset into p without
// consuming it, and returns how many bytes it copied.
func (b *RecvBuffer) CopyAt(p []byte) int {
	n := min(len(p), b.Readable())
	if n > 0 {
		b.data.read(b.readOffset, p[:n])
	}
	return n
}

// Skip advances the read offset by n bytes, as Read would, without copying.
// n is capped at Readable.
func (b *RecvBuffer) Skip(n int) {
	n = min(n, b.Readable())
	if n > 0 {
		b.advance(uint64(n))
	}
}

func (b *RecvBuffer) advance(n uint64) {
	b.readOffset += n
	b.received.remove(0, b.readOffset)
	b.data.releaseBelow(b.readOffset)
	b.shrinkBookkeeping()
}

// Footprint returns the bytes of memory the buffer holds for data not read
// yet: the capacity of its data buffers and of its bookkeeping.
func (b *RecvBuffer) Footprint() int { return b.data.held + b.bookkeeping() }

// OutOfOrder returns the part of Footprint's data buffers that holds data
// beyond the first gap: what a peer makes us keep without the reader being
// able to take it.
func (b *RecvBuffer) OutOfOrder() int { return b.data.outOfOrder }

// Fragments returns the runs of received data beyond the first gap.
func (b *RecvBuffer) Fragments() int {
	n := b.received.len()
	if n > 0 && b.received.first().start <= b.readOffset {
		n--
	}
	return n
}

// ReadOffset returns the offset of the next byte Read will return.
func (b *RecvBuffer) ReadOffset() uint64 { return b.readOffset }

// HighestReceived returns the highest offset+length of any data pushed,
// the value flow control counts against the window.
func (b *RecvBuffer) HighestReceived() uint64 { return b.highest }

// FinalSize returns the final size once a FIN has been received.
func (b *RecvBuffer) FinalSize() (size uint64, known bool) { return b.finalSize, b.finKnown }

// Done reports whether the final size is known and all data up to it has
// been read.
func (b *RecvBuffer) Done() bool { return b.finKnown && b.readOffset == b.finalSize }

// Release frees all memory held, for a stream that was reset or closed.
// Later Pushes still check the final size but store nothing, and Read
// returns no more data.
func (b *RecvBuffer) Release() {
	b.released = true
	b.received = rangeSet{}
	b.data.releaseAll(b.readOffset)
}
