package streambuf

import "github.com/turboretry/turboretry/internal/wire"

// MaxSendRanges bounds the acknowledged and lost range lists of a
// SendBuffer. Past it the lists get coarser, never wrong: an acknowledged
// range that no longer fits is queued for retransmission (the peer gets
// those bytes twice), and neighbouring lost ranges are merged (bytes in
// between may be resent).
const MaxSendRanges = 64

// SendBuffer holds the send side of a stream or CRYPTO stream: data written
// by the application stays in pooled chunks until the peer acknowledges it.
// Frames are packed by PeekFrame and AppendFrameData; lost ranges go out
// again, lowest offset first, before any new data.
//
// The zero value is an empty buffer, ready to use. A SendBuffer is not safe
// for concurrent use.
type SendBuffer struct {
	writeEnd   uint64 // offset after the last written byte
	nextOffset uint64 // first byte never sent; also the highest offset sent
	ackedUpTo  uint64 // every byte below is acknowledged
	acked      rangeSet
	lost       rangeSet
	data       chunkList

	closed     bool // FIN follows the written data
	finPending bool // FIN must (still or again) be sent
	finSent    bool // a FIN went out at least once
	finAcked   bool
	reset      bool
}

// Write copies p into the buffer and returns how many bytes it took: all of
// them, unless the stream is closed or reset (0) or the 2^62-1 stream
// offset limit is reached. The caller bounds how much is buffered, using
// Buffered and its flow-control credit.
func (b *SendBuffer) Write(p []byte) int {
	if b.closed || b.reset {
		return 0
	}
	n := int(min(uint64(len(p)), wire.MaxVarint-b.writeEnd))
	if n == 0 {
		return 0
	}
	if b.data.count == 0 {
		// Everything before is acknowledged: start fresh chunks here.
		b.data.releaseAll(b.writeEnd)
	}
	b.data.write(b.writeEnd, p[:n])
	b.writeEnd += uint64(n)
	return n
}

// Close marks the end of the stream: a FIN follows the data written so far.
// Further Writes take nothing.
func (b *SendBuffer) Close() {
	if b.closed || b.reset {
		return
	}
	b.closed, b.finPending = true, true
}

// Closed reports whether Close was called.
func (b *SendBuffer) Closed() bool { return b.closed }

// Buffered returns how many bytes are held: written but not yet
// acknowledged.
func (b *SendBuffer) Buffered() uint64 { return b.writeEnd - b.ackedUpTo }

// Footprint returns the memory the buffer holds in chunks: Buffered
// rounded up to whole chunks, what a budget for pinned memory counts.
func (b *SendBuffer) Footprint() int { return b.data.count * ChunkSize }

// Unsent returns how many written bytes have never been sent.
func (b *SendBuffer) Unsent() uint64 { return b.writeEnd - b.nextOffset }

// WriteOffset returns the offset after the last written byte.
func (b *SendBuffer) WriteOffset() uint64 { return b.writeEnd }

// SentHighWater returns the highest offset ever sent: the final size to put
// into RESET_STREAM (RFC 9000 section 4.5), and the amount of flow-control
// credit the stream has used.
func (b *SendBuffer) SentHighWater() uint64 { return b.nextOffset }

// HasData reports whether there is anything to send: lost data, new data or
// a FIN.
func (b *SendBuffer) HasData() bool {
	_, n, fin, _ := b.PeekFrame(1)
	return n > 0 || fin
}

// HasRetransmission reports whether lost data or a lost FIN waits to be
// resent. The connection may send such data even when flow control blocks
// new data, since it was counted when first sent.
func (b *SendBuffer) HasRetransmission() bool {
	_, n, fin, retx := b.PeekFrame(1)
	return retx && (n > 0 || fin)
}

// NextOffset returns the offset the next frame starts at, for sizing the
// frame header with wire.MaxStreamDataLen.
func (b *SendBuffer) NextOffset() uint64 {
	off, _, _, _ := b.PeekFrame(1)
	return off
}

// PeekFrame describes the frame AppendFrameData(dst, maxData) would produce,
// without changing anything: its offset, data length n (at most maxData),
// whether it carries the FIN, and whether it resends lost data (such bytes
// need no new flow-control credit). n == 0 && !fin means no frame: nothing
// to send, or maxData too small for the pending data. A FIN-only frame has
// n == 0 and fin set; it needs no data space, so maxData 0 yields it.
// The connection uses this to write the frame header before the data.
func (b *SendBuffer) PeekFrame(maxData int) (offset uint64, n int, fin, retransmission bool) {
	if b.reset {
		return b.nextOffset, 0, false, false
	}
	maxData = max(maxData, 0)
	// Lost data first. Lost spans may hold bytes acknowledged since (after
	// a merge or an ack that overtook the loss): skip those.
	for _, sp := range b.lost.spans() {
		gs, ge, ok := b.acked.firstGap(max(sp.start, b.ackedUpTo), sp.end)
		if !ok {
			continue
		}
		n = int(min(ge-gs, uint64(maxData)))
		return gs, n, n > 0 && b.finDue(gs+uint64(n)), true
	}
	if b.nextOffset < b.writeEnd {
		n = int(min(b.writeEnd-b.nextOffset, uint64(maxData)))
		return b.nextOffset, n, n > 0 && b.finDue(b.nextOffset+uint64(n)), false
	}
	if b.finPending {
		return b.writeEnd, 0, true, b.finSent
	}
	return b.nextOffset, 0, false, false
}

// finDue reports whether a frame ending at end carries the FIN.
func (b *SendBuffer) finDue(end uint64) bool {
	return b.finPending && end == b.writeEnd
}

// AppendFrameData appends the data of the next frame, at most maxData bytes,
// to dst and marks it sent. It returns the extended dst, the frame's offset
// and length, whether the frame carries the FIN, and whether it resends
// lost data. n == 0 && !fin means nothing was sent (nothing pending, or
// maxData too small for pending data). The result matches PeekFrame with
// the same maxData.
func (b *SendBuffer) AppendFrameData(dst []byte, maxData int) (dst2 []byte, offset uint64, n int, fin, retransmission bool) {
	b.trimLost()
	offset, n, fin, retransmission = b.PeekFrame(maxData)
	if n == 0 && !fin {
		return dst, offset, 0, false, retransmission
	}
	if n > 0 {
		start := len(dst)
		// The copy fills the new bytes: grow without append's zeroing
		// of them (a memclr per packet), when the room is there.
		if cap(dst)-start >= n {
			dst = dst[:start+n]
		} else {
			dst = append(dst, make([]byte, n)...) // compiled as a plain grow, no temporary
		}
		b.data.read(offset, dst[start:])
	}
	end := offset + uint64(n)
	if retransmission {
		b.lost.remove(offset, end)
	} else {
		b.nextOffset = end
	}
	if fin {
		b.finPending, b.finSent = false, true
	}
	return dst, offset, n, fin, retransmission
}

// trimLost drops acknowledged bytes from the front of the lost list, so the
// span PeekFrame picks is at its head and removing it never splits a span.
func (b *SendBuffer) trimLost() {
	b.lost.remove(0, b.ackedUpTo)
	for !b.lost.empty() {
		sp := b.lost.first()
		gs, _, ok := b.acked.firstGap(sp.start, sp.end)
		if !ok {
			b.lost.remove(sp.start, sp.end)
			continue
		}
		b.lost.remove(sp.start, gs)
		return
	}
}

// OnAcked marks the frame [offset, offset+n) (plus its FIN, if fin) as
// acknowledged and frees chunks the acknowledged prefix has passed.
// Duplicate and overlapping acknowledgements are fine.
func (b *SendBuffer) OnAcked(offset uint64, n int, fin bool) {
	if b.reset {
		return
	}
	if fin && b.closed {
		b.finAcked, b.finPending = true, false
	}
	start, end, ok := b.sentRange(offset, n)
	if !ok {
		return
	}
	b.acked.add(start, end)
	b.lost.remove(start, end)
	if first := b.acked.first(); first.start <= b.ackedUpTo {
		b.ackedUpTo = first.end
		b.acked.remove(first.start, first.end)
		if b.ackedUpTo == b.writeEnd {
			b.data.releaseAll(b.writeEnd)
		} else {
			b.data.releaseBelow(b.ackedUpTo)
		}
	}
	for b.acked.len() > MaxSendRanges {
		// Forget an acknowledgement, the smallest one, and send those
		// bytes again: wasteful but never wrong, and nothing else would
		// ever retransmit them.
		sp := b.acked.spans()[b.acked.smallestSpan()]
		b.acked.remove(sp.start, sp.end)
		b.lost.add(sp.start, sp.end)
	}
	b.capLost()
}

// sentRange clips [offset, offset+n) to bytes that were sent and are not in
// the acknowledged prefix; the connection's bookkeeping is trusted no further.
func (b *SendBuffer) sentRange(offset uint64, n int) (start, end uint64, ok bool) {
	if n <= 0 || offset >= b.nextOffset {
		return 0, 0, false
	}
	start = max(offset, b.ackedUpTo)
	end = min(b.nextOffset, offset+min(uint64(n), b.nextOffset-offset))
	return start, end, start < end
}

func (b *SendBuffer) capLost() {
	for b.lost.len() > MaxSendRanges {
		b.lost.mergeClosest()
	}
}

// OnLost queues the parts of the frame [offset, offset+n) (plus its FIN, if
// fin) that are not acknowledged yet for retransmission. An acknowledgement
// may still arrive later (spurious loss); it cancels the retransmission.
func (b *SendBuffer) OnLost(offset uint64, n int, fin bool) {
	if b.reset {
		return
	}
	if fin && b.closed && !b.finAcked {
		b.finPending = true
	}
	start, end, ok := b.sentRange(offset, n)
	for ok {
		var gs, ge uint64
		if gs, ge, ok = b.acked.firstGap(start, end); ok {
			b.lost.add(gs, ge)
			start = ge
		}
	}
	b.capLost()
}

// AllAcked reports whether the stream was closed and all data and the FIN
// have been acknowledged; the stream's send side is then complete. For a
// CRYPTO stream, which never closes, use Buffered() == 0.
func (b *SendBuffer) AllAcked() bool {
	return b.closed && b.finAcked && b.ackedUpTo == b.writeEnd
}

// Reset abandons the stream (RESET_STREAM): nothing more is sent or
// retransmitted, and every chunk goes back to the pool. It returns the final
// size for the RESET_STREAM frame, SentHighWater.
func (b *SendBuffer) Reset() (finalSize uint64) {
	b.reset = true
	b.finPending = false
	b.acked.clear()
	b.lost.clear()
	b.data.releaseAll(b.ackedUpTo)
	return b.nextOffset
}

// ResetAt abandons the stream except for its first reliable bytes
// (RESET_STREAM_AT, draft-ietf-quic-reliable-stream-reset): those are
// still sent and resent until acknowledged, later bytes and the FIN never
// again, and their chunks go back to the pool. AllAcked then reports when
// the reliable bytes are all acknowledged. With nothing left to deliver
// (reliable bytes all acknowledged) it is Reset. It returns the final size
// for the frame: the larger of reliable and SentHighWater.
func (b *SendBuffer) ResetAt(reliable uint64) (finalSize uint64) {
	reliable = min(reliable, b.writeEnd)
	finalSize = max(reliable, b.nextOffset)
	if reliable <= b.ackedUpTo || b.reset {
		b.Reset()
		return finalSize
	}
	// The stream now ends at reliable, without a FIN: as if closed there
	// with the FIN already acknowledged. Bytes beyond it were never sent
	// or need not be again.
	b.writeEnd = reliable
	b.nextOffset = min(b.nextOffset, reliable)
	b.closed, b.finPending, b.finAcked = true, false, true
	b.acked.remove(reliable, wire.MaxVarint+1)
	b.lost.remove(reliable, wire.MaxVarint+1)
	b.data.releaseFrom(reliable)
	return finalSize
}

// IsReset reports whether Reset was called.
func (b *SendBuffer) IsReset() bool { return b.reset }
