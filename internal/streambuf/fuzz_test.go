package streambuf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// recvModel is the reference the RecvBuffer fuzz target compares against:
// one map entry per byte, first received wins, rules of RFC 9000 4.5.
type recvModel struct {
	maxBuffer  uint64
	readOffset uint64
	highest    uint64
	finalSize  uint64
	finKnown   bool
	released   bool
	held       []bool // by offset; fuzz offsets that get stored stay small
	val        []byte
	nheld      int
}

func newRecvModel(maxBuffer uint64) *recvModel {
	return &recvModel{maxBuffer: maxBuffer, held: make([]bool, 1<<17), val: make([]byte, 1<<17)}
}

func (m *recvModel) runs(start, end uint64) int {
	if m.nheld+1 <= MaxRecvGaps {
		return m.nheld + 1 // cannot be more runs than bytes, plus the new one
	}
	// Number of separate runs of held bytes if [start, end) were added.
	n, in := 0, false
	hi := max(m.highest, end)
	for o := m.readOffset; o < hi; o++ {
		held := m.held[o] || o >= start && o < end
		if held && !in {
			n++
		}
		in = held
	}
	return n
}

func (m *recvModel) push(off uint64, data []byte, fin bool) error {
	if off > wire.MaxVarint || uint64(len(data)) > wire.MaxVarint-off {
		return ErrOffsetTooLarge
	}
	end := off + uint64(len(data))
	if m.finKnown && (end > m.finalSize || fin && end != m.finalSize) || fin && !m.finKnown && end < m.highest {
		return ErrFinalSize
	}
	if end > m.readOffset+m.maxBuffer {
		return ErrBufferExceeded
	}
	start := max(off, m.readOffset)
	if !m.released && start < end && m.runs(start, end) > MaxRecvGaps {
		return ErrTooFragmented
	}
	m.highest = max(m.highest, end)
	if fin {
		m.finalSize, m.finKnown = end, true
	}
	for o := start; o < end && !m.released; o++ {
		if !m.held[o] {
			m.held[o], m.val[o] = true, data[o-off]
			m.nheld++
		}
	}
	return nil
}

func (m *recvModel) read(n int) []byte {
	k := min(n, m.readable())
	out := m.val[m.readOffset : m.readOffset+uint64(k)]
	clear(m.held[m.readOffset : m.readOffset+uint64(k)])
	m.nheld -= k
	m.readOffset += uint64(k)
	return out
}

// readable returns the number of contiguous bytes at the read offset.
func (m *recvModel) readable() int {
	n := 0
	for o := m.readOffset; m.held[o]; o++ {
		n++
	}
	return n
}

// FuzzRecvBuffer decodes operations from the input, applies them to a
// RecvBuffer and to recvModel, and requires identical errors and data.
// Each op is 5 bytes: kind, two offset bytes, a length byte, a salt byte
// that varies the data so overlaps may disagree.
func FuzzRecvBuffer(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x10\x00\x04\x00\x00\x10\x00"))
	f.Add([]byte("\x00\x00\x20\x10\x01\x01\x00\x00\x30\x02\x04\x00\x00\x40\x00\x05\x00\x00\x00\x00"))
	f.Add([]byte("\x01\x00\x10\x00\x00\x00\x00\x00\x20\x00\x01\x00\x00\x00\x00"))
	f.Add([]byte("\x03\xff\xff\xff\x00\x06\x00\x00\x00\x00"))
	// Sparse one-byte frames, then bulk that fills the gaps (issue 23).
	f.Add([]byte("\xff\x00\x10\x00\x01\x00\x00\x20\x00\x01\x00\x00\x30\x00\x01\x00\x00\x40\x00\x01\x00" +
		"\xf8\x00\x00\xff\x07\xf8\x00\x10\xff\x07\x04\x00\x00\xff\x00\x05\x00\x00\xff\x00"))
	f.Fuzz(fuzzRecv)
}

func fuzzRecv(t *testing.T, in []byte) {
	maxBuffer := uint64(4096)
	if len(in) > 0 {
		maxBuffer = uint64(in[0]) * 64
		in = in[1:]
	}
	b := NewRecvBuffer(maxBuffer)
	m := newRecvModel(maxBuffer)
	for ; len(in) >= 5; in = in[5:] {
		kind := in[0] % 8
		off := uint64(in[1])<<8 | uint64(in[2])
		n := int(in[3]) * int(in[0]>>3+1)
		salt := in[4]
		switch kind {
		case 0, 1, 2, 3: // push; kind 1 sets FIN, kind 3 goes near 2^62
			if kind == 3 {
				off = wire.MaxVarint - off
			}
			data := pattern(off, n)
			for i := range data {
				data[i] ^= salt
			}
			got, want := b.Push(off, data, kind == 1), m.push(off, data, kind == 1)
			if !errors.Is(got, want) {
				t.Fatalf("Push(%d, %d, %v) = %v, model %v", off, n, kind == 1, got, want)
			}
		case 4: // read
			p := make([]byte, n)
			k, fin := b.Read(p)
			want := m.read(n)
			if !bytes.Equal(p[:k], want) {
				t.Fatalf("Read(%d) = %d bytes, model %d", n, k, len(want))
			}
			if fin != (m.finKnown && m.readOffset == m.finalSize) {
				t.Fatalf("Read fin = %v", fin)
			}
		case 5: // peek and skip
			p := b.Peek()
			k := min(len(p), n)
			if want := m.read(k); !bytes.Equal(p[:k], want) {
				t.Fatalf("Peek = %d bytes, model %d", k, len(want))
			}
			b.Skip(k)
		case 6:
			b.SetMaxBuffer(off)
			m.maxBuffer = off
		case 7:
			if salt == 0 {
				b.Release()
				m.released = true
				clear(m.held)
				m.nheld = 0
			}
		}
		if b.ReadOffset() != m.readOffset || b.HighestReceived() != m.highest {
			t.Fatalf("offsets %d/%d, model %d/%d", b.ReadOffset(), b.HighestReceived(), m.readOffset, m.highest)
		}
		if want := m.readable(); b.Readable() != want {
			t.Fatalf("Readable = %d, model %d", b.Readable(), want)
		}
		if err := checkRecvLayout(b); err != nil {
			t.Fatal(err)
		}
	}
	b.Release()
	if b.Footprint() != 0 || len(b.data.segs) != 0 {
		t.Fatalf("%d bytes in %d segments held after Release", b.Footprint(), len(b.data.segs))
	}
}

// FuzzSendBuffer decodes writes, frames, acks, losses, Close and Reset
// from the input. Every frame must match the written bytes; acked frames
// feed a RecvBuffer. At the end a loss-free network drives the sender to
// completion: it must reach AllAcked, free its chunks, and the receiver
// must hold exactly the written bytes. Each op is 3 bytes: kind and two
// argument bytes.
func FuzzSendBuffer(f *testing.F) {
	f.Add([]byte("\x00\x10\x00\x01\x04\x00\x03\x00\x00"))
	f.Add([]byte("\x00\x40\x00\x01\x01\x00\x01\x01\x00\x04\x00\x00\x02\x01\x00\x05\x00\x00"))
	f.Add([]byte("\x05\x00\x00\x01\x00\x00\x04\x00\x00\x02\x00\x00"))
	f.Add([]byte("\x00\x08\x00\x01\x00\x10\x06\x00\x00"))
	f.Fuzz(fuzzSend)
}

func fuzzSend(t *testing.T, in []byte) {
	var b SendBuffer
	var written []byte
	var frames []sentFrame
	rcv := NewRecvBuffer(1 << 30)
	ack := func(f *sentFrame) {
		b.OnAcked(f.off, len(f.data), f.fin)
		if !f.acked && !b.IsReset() {
			f.acked = true
			if err := rcv.Push(f.off, f.data, f.fin); err != nil {
				t.Fatalf("receiver: %v", err)
			}
		}
	}
	for ; len(in) >= 3; in = in[3:] {
		arg := int(in[1])<<8 | int(in[2])
		switch in[0] % 7 {
		case 0:
			p := pattern(uint64(len(written)), arg%20000)
			n := b.Write(p)
			if b.Closed() || b.IsReset() {
				if n != 0 {
					t.Fatal("Write after Close or Reset took data")
				}
			} else if n != len(p) {
				t.Fatalf("Write took %d of %d", n, len(p))
			}
			written = append(written, p[:n]...)
		case 1:
			if f, ok := nextFrame(t, &b, arg%5000, written); ok {
				frames = append(frames, f)
			}
		case 2, 3:
			if len(frames) > 0 {
				f := &frames[arg%len(frames)]
				if in[0]%7 == 2 {
					ack(f)
				} else {
					b.OnLost(f.off, len(f.data), f.fin)
				}
			}
		case 4:
			b.Close()
		case 5: // bogus ranges from a confused caller
			b.OnLost(uint64(arg)<<in[0]%64, int(in[1])-128, in[2]&1 == 1)
		case 6:
			if in[1] == 0xff {
				if got := b.Reset(); got != b.SentHighWater() {
					t.Fatalf("Reset = %d, SentHighWater %d", got, b.SentHighWater())
				}
			}
		}
		if b.WriteOffset() != uint64(len(written)) || b.SentHighWater() > b.WriteOffset() {
			t.Fatalf("offsets: written %d, sent %d", b.WriteOffset(), b.SentHighWater())
		}
	}
	if b.IsReset() {
		if b.HasData() || b.data.count != 0 {
			t.Fatal("reset sender still has data or chunks")
		}
		return
	}
	b.Close()
	// Frames whose fate is still open are declared lost.
	for _, f := range frames {
		if !f.acked {
			b.OnLost(f.off, len(f.data), f.fin)
		}
	}
	for i := 0; !b.AllAcked(); i++ {
		if i > 2*len(written)/1000+len(frames)+10 {
			t.Fatalf("sender never completes: buffered %d", b.Buffered())
		}
		f, ok := nextFrame(t, &b, 1000, written)
		if !ok {
			t.Fatalf("nothing to send but not AllAcked (buffered %d)", b.Buffered())
		}
		ack(&f)
	}
	if b.data.count != 0 || b.HasData() {
		t.Fatalf("AllAcked but %d chunks held", b.data.count)
	}
	if got := readAll(rcv); !bytes.Equal(got, written) || !rcv.Done() {
		t.Fatalf("receiver got %d bytes, written %d", len(got), len(written))
	}
}
