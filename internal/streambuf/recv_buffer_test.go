package streambuf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// pattern returns n bytes whose values depend on their stream offset, so
// misplaced data shows up in comparisons.
func pattern(off uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		o := off + uint64(i)
		p[i] = byte(o ^ o>>8 ^ o>>16)
	}
	return p
}

func mustPush(t *testing.T, b *RecvBuffer, off uint64, data []byte, fin bool) {
	t.Helper()
	if err := b.Push(off, data, fin); err != nil {
		t.Fatalf("Push(%d, %d bytes, %v): %v", off, len(data), fin, err)
	}
}

func readAll(b *RecvBuffer) []byte {
	var out []byte
	buf := make([]byte, 1000)
	for {
		n, _ := b.Read(buf)
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

func TestRecvOutOfOrderOverlapping(t *testing.T) {
	b := NewRecvBuffer(1 << 20)
	want := pattern(0, 50000)
	// Pieces out of order, overlapping and crossing chunk boundaries.
	pieces := [][2]int{{30000, 50000}, {100, 200}, {150, 20000}, {19000, 35000}, {0, 120}, {0, 50000}}
	for i, p := range pieces {
		mustPush(t, b, uint64(p[0]), want[p[0]:p[1]], p[1] == len(want))
		if i == 0 && b.Readable() != 0 {
			t.Fatalf("Readable = %d before offset 0 arrived", b.Readable())
		}
	}
	if b.Readable() != len(want) || b.HighestReceived() != uint64(len(want)) {
		t.Fatalf("Readable = %d, HighestReceived = %d", b.Readable(), b.HighestReceived())
	}
	if got := readAll(b); !bytes.Equal(got, want) {
		t.Fatal("reassembled data differs")
	}
	if !b.Done() || b.ReadOffset() != uint64(len(want)) {
		t.Fatalf("Done = %v, ReadOffset = %d", b.Done(), b.ReadOffset())
	}
	if len(b.data.segs) != 0 || b.data.held != 0 {
		t.Fatalf("%d segments (%d bytes) still held after reading everything", len(b.data.segs), b.data.held)
	}
}

func TestRecvCopiesData(t *testing.T) {
	b := NewRecvBuffer(1000)
	pkt := []byte("hello")
	mustPush(t, b, 0, pkt, false)
	copy(pkt, "XXXXX") // the packet buffer is reused
	p := make([]byte, 10)
	if n, _ := b.Read(p); string(p[:n]) != "hello" {
		t.Fatalf("read %q", p[:n])
	}
}

func TestRecvFirstReceivedWins(t *testing.T) {
	b := NewRecvBuffer(1000)
	mustPush(t, b, 2, []byte("cde"), false)
	mustPush(t, b, 0, []byte("ABCDEFG"), false) // differs on 2..4
	if got := string(readAll(b)); got != "ABcdeFG" {
		t.Fatalf("got %q, want ABcdeFG", got)
	}
}

func TestRecvFinOnlyEmptyStream(t *testing.T) {
	b := NewRecvBuffer(1000)
	if b.Done() {
		t.Fatal("Done before FIN")
	}
	mustPush(t, b, 0, nil, true)
	if size, ok := b.FinalSize(); !ok || size != 0 {
		t.Fatalf("FinalSize = %d, %v", size, ok)
	}
	n, fin := b.Read(make([]byte, 10))
	if n != 0 || !fin || !b.Done() {
		t.Fatalf("Read = %d, %v; Done = %v", n, fin, b.Done())
	}
	// A duplicate FIN with the same final size is fine; data is not.
	mustPush(t, b, 0, nil, true)
	if err := b.Push(0, []byte("x"), false); !errors.Is(err, ErrFinalSize) {
		t.Fatalf("data after final size 0: %v", err)
	}
}

func TestRecvFinalSizeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  func(b *RecvBuffer) error
	}{
		{"data beyond final size", func(b *RecvBuffer) error {
			if err := b.Push(0, []byte("abc"), true); err != nil {
				return err
			}
			return b.Push(3, []byte("d"), false)
		}},
		{"data straddling final size", func(b *RecvBuffer) error {
			if err := b.Push(5, nil, true); err != nil {
				return err
			}
			return b.Push(3, []byte("abc"), false)
		}},
		{"larger final size", func(b *RecvBuffer) error {
			if err := b.Push(0, []byte("abc"), true); err != nil {
				return err
			}
			return b.Push(3, []byte("d"), true)
		}},
		{"smaller final size", func(b *RecvBuffer) error {
			if err := b.Push(0, []byte("abc"), true); err != nil {
				return err
			}
			return b.Push(0, []byte("ab"), true)
		}},
		{"final size below received data", func(b *RecvBuffer) error {
			if err := b.Push(10, []byte("abc"), false); err != nil {
				return err
			}
			return b.Push(0, []byte("ab"), true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewRecvBuffer(1000)
			err := tc.ops(b)
			var e *Error
			if !errors.Is(err, ErrFinalSize) || !errors.As(err, &e) || e.Code != qerr.FinalSizeError {
				t.Fatalf("got %v, want FINAL_SIZE_ERROR", err)
			}
		})
	}
}

func TestRecvErrorLeavesStateUnchanged(t *testing.T) {
	b := NewRecvBuffer(100)
	mustPush(t, b, 0, []byte("abc"), false)
	if err := b.Push(90, make([]byte, 20), true); !errors.Is(err, ErrBufferExceeded) {
		t.Fatalf("got %v, want ErrBufferExceeded", err)
	}
	if _, ok := b.FinalSize(); ok || b.HighestReceived() != 3 {
		t.Fatal("failed Push changed the final size or highest offset")
	}
	// Reading moves the window: the same data now fits.
	readAll(b)
	mustPush(t, b, 90, make([]byte, 13), true)
	b.SetMaxBuffer(10)
	if err := b.Push(3, make([]byte, 11), false); !errors.Is(err, ErrBufferExceeded) {
		t.Fatalf("after SetMaxBuffer(10): %v", err)
	}
}

func TestRecvOffsetNearLimit(t *testing.T) {
	const limit = wire.MaxVarint // 2^62-1
	b := NewRecvBuffer(1 << 20)
	b.readOffset = limit - 100 // as if that much had been read already
	b.highest = b.readOffset
	b.data.split = b.readOffset
	mustPush(t, b, limit-100, pattern(limit-100, 100), true)
	if got := readAll(b); !bytes.Equal(got, pattern(limit-100, 100)) || !b.Done() {
		t.Fatal("data ending at 2^62-1 not delivered")
	}
	b2 := NewRecvBuffer(1 << 20)
	for _, tc := range []struct {
		off uint64
		n   int
	}{{limit, 1}, {limit - 1, 2}, {1 << 63, 0}, {^uint64(0), 1}} {
		if err := b2.Push(tc.off, make([]byte, tc.n), false); !errors.Is(err, ErrOffsetTooLarge) {
			t.Errorf("Push(%d, %d bytes): %v, want ErrOffsetTooLarge", tc.off, tc.n, err)
		}
	}
	if err := b2.Push(limit-10, make([]byte, 10), false); !errors.Is(err, ErrBufferExceeded) {
		t.Errorf("far offset within 2^62: %v, want ErrBufferExceeded", err)
	}
}

func TestRecvPeekSkip(t *testing.T) {
	b := NewRecvBuffer(1 << 20)
	want := pattern(0, 3*ChunkSize+10)
	mustPush(t, b, 0, want[:ChunkSize+5], false)
	mustPush(t, b, ChunkSize+5, want[ChunkSize+5:], true)
	var got []byte
	for {
		p := b.Peek()
		if len(p) == 0 {
			break
		}
		if len(p) > ChunkSize {
			t.Fatalf("Peek returned %d bytes, more than a chunk", len(p))
		}
		n := min(len(p), 7000) // consume in pieces like crypto/tls
		got = append(got, p[:n]...)
		b.Skip(n)
	}
	if !bytes.Equal(got, want) || !b.Done() {
		t.Fatalf("peeked %d bytes, want %d; Done = %v", len(got), len(want), b.Done())
	}
	b.Skip(100) // beyond Readable: capped, no panic
	if b.ReadOffset() != uint64(len(want)) {
		t.Fatalf("ReadOffset = %d after over-Skip", b.ReadOffset())
	}
}

func TestRecvRelease(t *testing.T) {
	b := NewRecvBuffer(1 << 20)
	mustPush(t, b, 0, pattern(0, 100), false)
	mustPush(t, b, 2*ChunkSize, pattern(0, 100), false)
	if len(b.data.segs) != 2 || b.Footprint() > 1024 {
		t.Fatalf("%d segments, %d bytes held; want 2 small ones", len(b.data.segs), b.Footprint())
	}
	b.Release()
	if len(b.data.segs) != 0 || b.Footprint() != 0 || b.Readable() != 0 {
		t.Fatalf("after Release: %d segments, %d bytes, Readable %d", len(b.data.segs), b.Footprint(), b.Readable())
	}
	const size = 2*ChunkSize + 300
	mustPush(t, b, 0, pattern(0, size), true)
	if b.Footprint() != 0 || b.Readable() != 0 {
		t.Fatal("Push after Release stored data")
	}
	if err := b.Push(0, pattern(0, size+1), false); !errors.Is(err, ErrFinalSize) {
		t.Fatalf("final size not checked after Release: %v", err)
	}
}

func TestRecvTooFragmented(t *testing.T) {
	b := NewRecvBuffer(1 << 20)
	for i := range MaxRecvGaps {
		mustPush(t, b, uint64(2*i+1), []byte{1}, false)
	}
	if err := b.Push(5000, []byte{1}, false); !errors.Is(err, ErrTooFragmented) {
		t.Fatalf("got %v, want ErrTooFragmented", err)
	}
	// Filling holes is still accepted: it does not add gaps.
	mustPush(t, b, 0, make([]byte, 2*MaxRecvGaps), false)
	if b.Readable() != 2*MaxRecvGaps {
		t.Fatalf("Readable = %d", b.Readable())
	}
}

func TestRecvSteadyStateNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	b := NewRecvBuffer(1 << 20)
	frame := pattern(0, 1200)
	out := make([]byte, 1200)
	var off uint64
	allocs := testing.AllocsPerRun(1000, func() {
		_ = b.Push(off, frame, false)
		off += 1200
		b.Read(out)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Push+Read, want 0", allocs)
	}
}

// TestRecvSparseFramesHoldLittle is issue 23's attack on one stream: one-byte
// frames 16 KiB apart, offset 0 never sent. Each used to pin a 16 KiB chunk;
// now the buffer holds about what arrived plus a little per fragment, and
// gives it all back on Release.
func TestRecvSparseFramesHoldLittle(t *testing.T) {
	const frames = 49
	b := NewRecvBuffer(1 << 20)
	for i := range frames {
		mustPush(t, b, uint64(i+1)*ChunkSize, []byte{byte(i)}, false)
	}
	if err := checkRecvLayout(b); err != nil {
		t.Fatal(err)
	}
	if got := b.Fragments(); got != frames {
		t.Fatalf("Fragments = %d, want %d", got, frames)
	}
	if fp := b.Footprint(); fp > 4<<10 {
		t.Fatalf("%d one-byte frames hold %d bytes, want < 4 KiB", frames, fp)
	}
	if b.OutOfOrder() != frames*minSegmentCap {
		t.Fatalf("OutOfOrder = %d, want %d", b.OutOfOrder(), frames*minSegmentCap)
	}
	b.Release()
	if b.Footprint() != 0 || b.OutOfOrder() != 0 || b.Fragments() != 0 {
		t.Fatalf("after Release: Footprint %d, OutOfOrder %d, Fragments %d", b.Footprint(), b.OutOfOrder(), b.Fragments())
	}
}

// TestRecvHeldBytesTrackData: out-of-order data costs about its size however
// it arrives (one-byte frames backwards, every other byte then the rest),
// becomes in-order data when the gap before it fills, and reading gives the
// memory back.
func TestRecvHeldBytesTrackData(t *testing.T) {
	const base, n = 5000, 2000 // n/2 fragments stay within MaxRecvGaps
	want := pattern(base, n)
	for _, tc := range []struct {
		name  string
		order func(push func(i int))
	}{
		{"backwards", func(push func(int)) {
			for i := n - 1; i >= 0; i-- {
				push(i)
			}
		}},
		{"odd then even", func(push func(int)) {
			for i := 1; i < n; i += 2 {
				push(i)
			}
			for i := 0; i < n; i += 2 {
				push(i)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewRecvBuffer(1 << 20)
			tc.order(func(i int) {
				mustPush(t, b, base+uint64(i), want[i:i+1], false)
				if err := checkRecvLayout(b); err != nil {
					t.Fatalf("after byte %d: %v", i, err)
				}
			})
			if b.Fragments() != 1 || b.OutOfOrder() > 2*n || b.Footprint() > 2*n+1024 {
				t.Fatalf("%d bytes in one run: Fragments %d, OutOfOrder %d, Footprint %d", n, b.Fragments(), b.OutOfOrder(), b.Footprint())
			}
			mustPush(t, b, 0, pattern(0, base), false)
			if b.Fragments() != 0 || b.OutOfOrder() != 0 {
				t.Fatalf("gap filled: Fragments %d, OutOfOrder %d", b.Fragments(), b.OutOfOrder())
			}
			if got := readAll(b); !bytes.Equal(got[base:], want) {
				t.Fatal("data differs")
			}
			if b.data.held != 0 {
				t.Fatalf("%d bytes held after reading everything", b.data.held)
			}
		})
	}
}

// TestRecvBulkUsesChunks: in-order bulk data goes into whole chunks (no
// copying through growing buffers), also when the reader lags.
func TestRecvBulkUsesChunks(t *testing.T) {
	b := NewRecvBuffer(1 << 20)
	const total = 10 * ChunkSize
	for off := 0; off < total; off += 1200 {
		mustPush(t, b, uint64(off), pattern(uint64(off), min(1200, total-off)), false)
	}
	for i, s := range b.data.segs {
		if !s.isChunk() {
			t.Fatalf("segment %d at %d has capacity %d, want a chunk", i, s.off, cap(s.buf))
		}
	}
	if len(b.data.segs) != 10 {
		t.Fatalf("%d segments for 10 chunks of data", len(b.data.segs))
	}
}
