package streambuf

import "testing"

// BenchmarkRecvPushRead pushes 1200-byte frames in order and reads them.
func BenchmarkRecvPushRead(b *testing.B) {
	rb := NewRecvBuffer(1 << 20)
	frame := pattern(0, 1200)
	out := make([]byte, 1200)
	var off uint64
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := rb.Push(off, frame, false); err != nil {
			b.Fatal(err)
		}
		off += uint64(len(frame))
		rb.Read(out)
	}
}

// BenchmarkRecvReorderedPushRead delivers pairs of 1200-byte frames swapped,
// so every other Push fills a hole.
func BenchmarkRecvReorderedPushRead(b *testing.B) {
	rb := NewRecvBuffer(1 << 20)
	frame := pattern(0, 1200)
	out := make([]byte, 2400)
	var off uint64
	b.SetBytes(2 * int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		_ = rb.Push(off+1200, frame, false)
		_ = rb.Push(off, frame, false)
		off += 2400
		rb.Read(out)
	}
}

// BenchmarkSendWritePackAck writes 1200 bytes, packs them into a frame and
// acknowledges it.
func BenchmarkSendWritePackAck(b *testing.B) {
	var sb SendBuffer
	data := pattern(0, 1200)
	pkt := make([]byte, 0, 1500)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sb.Write(data)
		_, off, n, fin, _ := sb.AppendFrameData(pkt[:0], 1200)
		sb.OnAcked(off, n, fin)
	}
}

// BenchmarkSendPipelined keeps 32 frames in flight, acknowledging the
// oldest as each new one goes out: the buffer holds data across chunks.
func BenchmarkSendPipelined(b *testing.B) {
	var sb SendBuffer
	data := pattern(0, 1200)
	pkt := make([]byte, 0, 1500)
	var ring [32]uint64
	i := 0
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sb.Write(data)
		_, off, _, _, _ := sb.AppendFrameData(pkt[:0], 1200)
		if i >= len(ring) {
			sb.OnAcked(ring[i%len(ring)], 1200, false)
		}
		ring[i%len(ring)] = off
		i++
	}
}
