package wire

import (
	"bytes"
	"testing"
)

func benchInitial() []byte {
	h := LongHeader{Type: PacketTypeInitial, Version: Version1, DestConnID: bytes.Repeat([]byte{1}, 8),
		SrcConnID: bytes.Repeat([]byte{2}, 8), Token: bytes.Repeat([]byte{3}, 60), Length: 1200}
	b := AppendLongHeader(nil, &h, 4, 2)
	return append(b, make([]byte, 1200)...)
}

func benchShort() []byte {
	return append(AppendShortHeader(nil, bytes.Repeat([]byte{1}, 8), 2, false, false), make([]byte, 1200)...)
}

func benchStream() []byte {
	return AppendStreamFrame(nil, 4, 123456, make([]byte, 1100), false, true)
}

func benchAckRanges() []AckRange {
	ranges := make([]AckRange, 8)
	pn := uint64(100000)
	for i := range ranges {
		ranges[i] = AckRange{Smallest: pn - 20, Largest: pn}
		pn -= 30
	}
	return ranges
}

// TestHotPathsDoNotAllocate pins the zero-allocation promise of the
// per-packet parsers and builders.
func TestHotPathsDoNotAllocate(t *testing.T) {
	initial, short, stream := benchInitial(), benchShort(), benchStream()
	ack := AppendAckFrame(nil, benchAckRanges(), 100)
	buf := make([]byte, 0, 2048)
	var lh LongHeader
	var sh ShortHeader
	fr := Frame{AckRanges: make([]AckRange, 0, 16)}
	if err := ParseLongHeader(initial, &lh); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"ParseLongHeader":  func() { _ = ParseLongHeader(initial, &lh) },
		"ParseShortHeader": func() { _ = ParseShortHeader(short, 8, &sh) },
		"ParseDestConnID":  func() { _, _ = ParseDestConnID(initial, 8) },
		"ParseFrame/STREAM": func() {
			if _, err := ParseFrame(stream, &fr); err != nil {
				t.Fatal(err)
			}
		},
		"ParseFrame/ACK": func() {
			if _, err := ParseFrame(ack, &fr); err != nil || len(fr.AckRanges) != 8 {
				t.Fatal(err)
			}
		},
		"ParseFrame/truncated": func() { _, _ = ParseFrame(stream[:3], &fr) },
		"AppendStreamFrame":    func() { _ = AppendStreamFrame(buf, 4, 123456, stream[:1000], true, true) },
		"AppendAckFrame":       func() { _ = AppendAckFrame(buf, benchAckRangesStatic[:], 100) },
		"AppendLongHeader":     func() { _ = AppendLongHeader(buf, &lh, 4, 2) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocations per run", name, a)
		}
	}
}

var benchAckRangesStatic = [8]AckRange(benchAckRanges())

func BenchmarkParseInitialHeader(b *testing.B) {
	pkt := benchInitial()
	var h LongHeader
	b.ReportAllocs()
	for b.Loop() {
		if err := ParseLongHeader(pkt, &h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseShortHeader(b *testing.B) {
	pkt := benchShort()
	var h ShortHeader
	b.ReportAllocs()
	for b.Loop() {
		if err := ParseShortHeader(pkt, 8, &h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseStreamFrame(b *testing.B) {
	data := benchStream()
	var f Frame
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFrame(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAckFrame8Ranges(b *testing.B) {
	data := AppendAckFrame(nil, benchAckRanges(), 100)
	f := Frame{AckRanges: make([]AckRange, 0, 16)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFrame(data, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendStreamFrame(b *testing.B) {
	data := make([]byte, 1100)
	buf := make([]byte, 0, 1500)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendStreamFrame(buf[:0], 4, 123456, data, false, true)
	}
}

func BenchmarkAppendAckFrame(b *testing.B) {
	ranges := benchAckRanges()
	buf := make([]byte, 0, 1500)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendAckFrame(buf[:0], ranges, 100)
	}
}
