package quic

import (
	"bytes"
	"testing"
)

// FuzzRecvBuffer inserts overlapping, reordered pieces of a known stream
// and checks that reading returns exactly the stream.
func FuzzRecvBuffer(f *testing.F) {
	f.Add([]byte{0, 10, 5, 10, 20, 3})
	f.Add([]byte{30, 5, 0, 40, 2, 2})
	f.Add([]byte{1, 1, 0, 1, 0, 2, 3, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const size = 64
		stream := testData(size, 11)
		var b recvBuffer
		covered := make([]bool, size)
		var out []byte
		for i := 0; i+1 < len(ops); i += 2 {
			off := int(ops[i]) % size
			n := min(int(ops[i+1])%17, size-off)
			b.insert(uint64(off), stream[off:off+n])
			for k := off; k < off+n; k++ {
				covered[k] = true
			}
			if ops[i+1]&0x80 != 0 {
				buf := make([]byte, int(ops[i])%9+1)
				k := b.read(buf)
				out = append(out, buf[:k]...)
			}
		}
		rest := make([]byte, size)
		k := b.read(rest)
		out = append(out, rest[:k]...)
		want := 0
		for want < size && covered[want] {
			want++
		}
		if !bytes.Equal(out, stream[:want]) {
			t.Fatalf("read %d bytes %x, want the first %d bytes", len(out), out, want)
		}
	})
}

// FuzzSendBuffer acknowledges and loses random ranges and checks that
// retransmissions only return the right bytes and that everything is
// eventually acknowledged.
func FuzzSendBuffer(f *testing.F) {
	f.Add([]byte{10, 0, 5, 1, 3, 2})
	f.Add([]byte{200, 1, 7, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		data := testData(256, 12)
		var b sendBuffer
		b.write(data)
		b.fin = true
		type sent struct{ off, n uint64 }
		var inFlight []sent
		for i := 0; i+1 < len(ops); i += 2 {
			switch ops[i] % 3 {
			case 0: // send something
				maxLen := uint64(ops[i+1]%40 + 1)
				off, d, ok := b.popLost(maxLen)
				if !ok {
					off, d = b.popNew(maxLen)
				}
				if !bytes.Equal(d, data[off:off+uint64(len(d))]) {
					t.Fatalf("wrong bytes at %d", off)
				}
				if len(d) > 0 {
					inFlight = append(inFlight, sent{off, uint64(len(d))})
				}
			case 1, 2: // acknowledge or lose the k-th packet in flight
				if len(inFlight) == 0 {
					continue
				}
				k := int(ops[i+1]) % len(inFlight)
				p := inFlight[k]
				inFlight = append(inFlight[:k], inFlight[k+1:]...)
				if ops[i]%3 == 1 {
					b.onAcked(p.off, p.n, false)
				} else {
					b.onLost(p.off, p.n, false)
				}
			}
		}
		// Deliver everything that is left, as a perfect network would.
		for _, p := range inFlight {
			b.onAcked(p.off, p.n, false)
		}
		for guard := 0; b.hasData() && guard < 1000; guard++ {
			off, d, ok := b.popLost(50)
			if !ok {
				off, d = b.popNew(50)
			}
			if len(d) == 0 {
				b.finSent = true
				b.onAcked(0, 0, true)
				continue
			}
			if !bytes.Equal(d, data[off:off+uint64(len(d))]) {
				t.Fatalf("wrong bytes at %d", off)
			}
			b.onAcked(off, uint64(len(d)), false)
		}
		if !b.allAcked() {
			t.Fatalf("not all acknowledged: base %d, %d bytes left", b.base, b.buffered())
		}
	})
}

func TestRangeSet(t *testing.T) {
	var s rangeSet
	s.add(10, 20)
	s.add(30, 40)
	s.add(20, 30) // bridges both
	if len(s) != 1 || s[0] != (byteRange{10, 40}) {
		t.Fatalf("%v", s)
	}
	s.add(0, 5)
	s.add(50, 60)
	if start, end, ok := s.firstGap(0, 100); !ok || start != 5 || end != 10 {
		t.Fatalf("gap %d-%d %v", start, end, ok)
	}
	s.removeBelow(35)
	if s[0] != (byteRange{35, 40}) || len(s) != 2 {
		t.Fatalf("%v", s)
	}
}
