package streambuf

import (
	"bytes"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// sentFrame is a frame produced by AppendFrameData, as the tests track it.
type sentFrame struct {
	off   uint64
	data  []byte
	fin   bool
	retx  bool
	acked bool
}

// nextFrame packs one frame and checks it against PeekFrame and against
// the bytes written at those offsets.
func nextFrame(t testing.TB, b *SendBuffer, maxData int, written []byte) (sentFrame, bool) {
	t.Helper()
	pOff, pN, pFin, pRetx := b.PeekFrame(maxData)
	dst := []byte("hdr")
	dst, off, n, fin, retx := b.AppendFrameData(dst, maxData)
	if off != pOff || n != pN || fin != pFin || retx != pRetx {
		t.Fatalf("PeekFrame = %d,%d,%v,%v; AppendFrameData = %d,%d,%v,%v", pOff, pN, pFin, pRetx, off, n, fin, retx)
	}
	if n == 0 && !fin {
		return sentFrame{}, false
	}
	if n > maxData || len(dst) != 3+n || string(dst[:3]) != "hdr" {
		t.Fatalf("frame of %d bytes for maxData %d, dst len %d", n, maxData, len(dst))
	}
	if end := off + uint64(n); end > uint64(len(written)) || !bytes.Equal(dst[3:], written[off:end]) {
		t.Fatalf("frame [%d,%d) does not match written data", off, end)
	}
	if fin && (!b.Closed() || off+uint64(n) != uint64(len(written))) {
		t.Fatalf("FIN on frame [%d,+%d), written %d, closed %v", off, n, len(written), b.Closed())
	}
	return sentFrame{off: off, data: bytes.Clone(dst[3:]), fin: fin, retx: retx}, true
}

func TestSendFinOnlyStream(t *testing.T) {
	var b SendBuffer
	if b.HasData() {
		t.Fatal("HasData on an empty open stream")
	}
	b.Close()
	if !b.HasData() || b.NextOffset() != 0 {
		t.Fatalf("HasData = %v, NextOffset = %d", b.HasData(), b.NextOffset())
	}
	f, ok := nextFrame(t, &b, 0, nil) // a FIN-only frame needs no data space
	if !ok || !f.fin || len(f.data) != 0 || f.off != 0 || f.retx {
		t.Fatalf("frame %+v, ok %v", f, ok)
	}
	if b.HasData() || b.AllAcked() {
		t.Fatal("FIN sent: nothing more to send, not acked yet")
	}
	b.OnAcked(0, 0, true)
	if !b.AllAcked() {
		t.Fatal("not AllAcked after the FIN was acknowledged")
	}
}

func TestSendFinLostAndResent(t *testing.T) {
	var b SendBuffer
	written := pattern(0, 3000)
	b.Write(written)
	f1, _ := nextFrame(t, &b, 2000, written)
	f2, _ := nextFrame(t, &b, 2000, written)
	if f2.fin {
		t.Fatal("FIN before Close")
	}
	b.Close()
	f3, _ := nextFrame(t, &b, 2000, written)
	if !f3.fin || len(f3.data) != 0 || f3.off != 3000 {
		t.Fatalf("want FIN-only frame at 3000, got %+v", f3)
	}
	b.OnAcked(f1.off, len(f1.data), f1.fin)
	b.OnAcked(f2.off, len(f2.data), f2.fin)
	b.OnLost(f3.off, len(f3.data), f3.fin)
	if !b.HasRetransmission() {
		t.Fatal("lost FIN not queued")
	}
	f4, _ := nextFrame(t, &b, 2000, written)
	if !f4.fin || !f4.retx || f4.off != 3000 || len(f4.data) != 0 {
		t.Fatalf("want resent FIN, got %+v", f4)
	}
	b.OnAcked(f4.off, 0, true)
	if !b.AllAcked() || b.data.count != 0 {
		t.Fatalf("AllAcked = %v, chunks held %d", b.AllAcked(), b.data.count)
	}

	// Lost data carrying the FIN comes back with the FIN.
	var c SendBuffer
	c.Write(written[:100])
	c.Close()
	g, _ := nextFrame(t, &c, 1000, written[:100])
	c.OnLost(g.off, len(g.data), g.fin)
	g2, _ := nextFrame(t, &c, 60, written[:100])
	g3, _ := nextFrame(t, &c, 60, written[:100])
	if g2.fin || !g2.retx || !g3.fin || !g3.retx || g3.off != 60 || len(g3.data) != 40 {
		t.Fatalf("retransmissions %+v, %+v", g2, g3)
	}
}

func TestSendLostBeforeNewData(t *testing.T) {
	var b SendBuffer
	written := pattern(0, 5000)
	b.Write(written)
	var fs []sentFrame
	for range 3 {
		f, _ := nextFrame(t, &b, 1000, written)
		fs = append(fs, f)
	}
	b.OnLost(fs[2].off, len(fs[2].data), false)
	b.OnLost(fs[0].off, len(fs[0].data), false)
	for i, want := range []uint64{0, 2000, 3000} {
		f, _ := nextFrame(t, &b, 1000, written)
		if f.off != want || f.retx != (i < 2) {
			t.Fatalf("frame %d at %d (retx %v), want offset %d", i, f.off, f.retx, want)
		}
	}
}

func TestSendSpuriousLoss(t *testing.T) {
	var b SendBuffer
	written := pattern(0, 2000)
	b.Write(written)
	b.Close()
	f1, _ := nextFrame(t, &b, 1000, written)
	f2, _ := nextFrame(t, &b, 1000, written)
	// Ack before loss declaration: the later loss must not queue anything.
	b.OnAcked(f1.off, len(f1.data), f1.fin)
	b.OnLost(f1.off, len(f1.data), f1.fin)
	if b.HasData() {
		t.Fatal("acknowledged frame queued for retransmission")
	}
	// Loss declared, then the ack arrives: the retransmission is cancelled.
	b.OnLost(f2.off, len(f2.data), f2.fin)
	b.OnAcked(f2.off, len(f2.data), f2.fin)
	if b.HasData() || !b.AllAcked() {
		t.Fatalf("HasData = %v, AllAcked = %v", b.HasData(), b.AllAcked())
	}
	// Acks and losses for bytes never sent are ignored.
	b.OnLost(5000, 100, false)
	b.OnAcked(1<<62, 100, false)
	if b.HasData() || b.Buffered() != 0 {
		t.Fatal("bogus ranges changed state")
	}
}

func TestSendPartialAckOverlap(t *testing.T) {
	var b SendBuffer
	written := pattern(0, 1000)
	b.Write(written)
	f, _ := nextFrame(t, &b, 1000, written)
	b.OnAcked(200, 100, false)
	b.OnAcked(250, 100, false) // overlapping ack
	b.OnLost(f.off, len(f.data), false)
	got := []uint64{}
	for {
		g, ok := nextFrame(t, &b, 1000, written)
		if !ok {
			break
		}
		got = append(got, g.off, g.off+uint64(len(g.data)))
	}
	if len(got) != 4 || got[0] != 0 || got[1] != 200 || got[2] != 350 || got[3] != 1000 {
		t.Fatalf("retransmitted %v, want [0 200 350 1000]", got)
	}
}

func TestSendReset(t *testing.T) {
	var b SendBuffer
	written := pattern(0, 40000)
	b.Write(written)
	f, _ := nextFrame(t, &b, 1000, written)
	b.OnLost(f.off, len(f.data), false)
	if got := b.Reset(); got != 1000 || b.SentHighWater() != 1000 {
		t.Fatalf("Reset final size %d, want 1000", got)
	}
	if b.HasData() || b.data.count != 0 || b.Write([]byte("x")) != 0 {
		t.Fatal("reset stream still sends, holds chunks or takes writes")
	}
	if _, ok := nextFrame(t, &b, 1000, written); ok {
		t.Fatal("frame after Reset")
	}
	b.OnAcked(0, 1000, false) // late acks are harmless
}

// TestSendResetAt: after ResetAt the bytes below the reliable size still go
// out (lost ones again, unsent ones for the first time), nothing beyond it
// or a FIN does, and AllAcked waits for exactly the reliable bytes.
func TestSendResetAt(t *testing.T) {
	written := pattern(0, 40000)
	t.Run("unsent below reliable", func(t *testing.T) {
		var b SendBuffer
		b.Write(written)
		b.Close()
		f1, _ := nextFrame(t, &b, 10000, written)
		f2, _ := nextFrame(t, &b, 10000, written)
		b.OnLost(f1.off, len(f1.data), false)
		if got := b.ResetAt(25000); got != 25000 {
			t.Fatalf("final size %d, want 25000", got)
		}
		if b.data.count != 2 || b.Buffered() != 25000 || b.Write([]byte("x")) != 0 {
			t.Fatalf("after ResetAt: %d chunks, %d buffered", b.data.count, b.Buffered())
		}
		r, _ := nextFrame(t, &b, 10000, written)
		n, _ := nextFrame(t, &b, 10000, written)
		if !r.retx || r.off != 0 || len(r.data) != 10000 || n.retx || n.off != 20000 || len(n.data) != 5000 || n.fin {
			t.Fatalf("frames after ResetAt: %+v %+v", r, n)
		}
		if f, ok := nextFrame(t, &b, 10000, written); ok {
			t.Fatalf("frame beyond the reliable size: %+v", f)
		}
		b.OnLost(n.off, len(n.data), true) // a lost FIN is not resent either
		if n2, _ := nextFrame(t, &b, 10000, written); n2.off != 20000 || len(n2.data) != 5000 || n2.fin {
			t.Fatalf("resent %+v", n2)
		}
		b.OnAcked(f2.off, len(f2.data), false)
		b.OnAcked(n.off, len(n.data), false)
		if b.AllAcked() {
			t.Fatal("AllAcked with [0,10000) unacknowledged")
		}
		b.OnAcked(r.off, len(r.data), false)
		if !b.AllAcked() || b.data.count != 0 {
			t.Fatalf("AllAcked %v, %d chunks", b.AllAcked(), b.data.count)
		}
	})
	t.Run("sent beyond reliable", func(t *testing.T) {
		var b SendBuffer
		b.Write(written)
		var fs []sentFrame
		for range 3 {
			f, _ := nextFrame(t, &b, 10000, written)
			fs = append(fs, f)
		}
		b.OnLost(fs[2].off, len(fs[2].data), false)
		if got := b.ResetAt(15000); got != 30000 {
			t.Fatalf("final size %d, want 30000 (sent)", got)
		}
		if f, ok := nextFrame(t, &b, 10000, written); ok {
			t.Fatalf("frame after ResetAt with everything below sent: %+v", f)
		}
		b.OnLost(fs[1].off, len(fs[1].data), false)
		if f, _ := nextFrame(t, &b, 10000, written); f.off != 10000 || len(f.data) != 5000 || !f.retx {
			t.Fatalf("resent %+v, want [10000,15000)", f)
		}
		b.OnAcked(fs[0].off, len(fs[0].data), false)
		b.OnAcked(fs[1].off, len(fs[1].data), false)
		if !b.AllAcked() || b.IsReset() {
			t.Fatalf("AllAcked %v, IsReset %v", b.AllAcked(), b.IsReset())
		}
	})
	t.Run("all acknowledged", func(t *testing.T) {
		var b SendBuffer
		b.Write(written)
		f, _ := nextFrame(t, &b, 10000, written)
		b.OnAcked(f.off, len(f.data), false)
		if got := b.ResetAt(5000); got != 10000 || !b.IsReset() || b.HasData() {
			t.Fatalf("final size %d, IsReset %v", got, b.IsReset())
		}
	})
}

func TestSendWriteLimit(t *testing.T) {
	var b SendBuffer
	b.writeEnd = wire.MaxVarint - 3
	b.nextOffset, b.ackedUpTo = b.writeEnd, b.writeEnd
	if n := b.Write([]byte("abcdef")); n != 3 {
		t.Fatalf("Write near 2^62-1 took %d bytes, want 3", n)
	}
	b.Close()
	dst, off, n, fin, _ := b.AppendFrameData(nil, 100)
	if off != wire.MaxVarint-3 || n != 3 || !fin || string(dst) != "abc" {
		t.Fatalf("frame %d,%d,%v %q", off, n, fin, dst)
	}
	b.OnAcked(off, n, fin)
	if !b.AllAcked() {
		t.Fatal("not AllAcked")
	}
}

// TestSendRangeOverflow acknowledges every other one-byte frame, far more
// separate ranges than MaxSendRanges: the coarser fallback must still end
// with every byte delivered and acknowledged.
func TestSendRangeOverflow(t *testing.T) {
	var b SendBuffer
	const size = 4 * MaxSendRanges
	written := pattern(0, size)
	b.Write(written)
	b.Close()
	recv := NewRecvBuffer(size)
	var fs []sentFrame
	for {
		f, ok := nextFrame(t, &b, 1, written)
		if !ok {
			break
		}
		fs = append(fs, f)
	}
	for i := 0; i < len(fs); i += 2 {
		b.OnAcked(fs[i].off, len(fs[i].data), fs[i].fin)
		mustPush(t, recv, fs[i].off, fs[i].data, fs[i].fin)
	}
	if b.acked.len() > MaxSendRanges || b.lost.len() > MaxSendRanges {
		t.Fatalf("range lists grew to %d and %d", b.acked.len(), b.lost.len())
	}
	for i := 1; i < len(fs); i += 2 {
		b.OnLost(fs[i].off, len(fs[i].data), fs[i].fin)
	}
	for range 100 {
		f, ok := nextFrame(t, &b, 1000, written)
		if !ok {
			break
		}
		b.OnAcked(f.off, len(f.data), f.fin)
		mustPush(t, recv, f.off, f.data, f.fin)
	}
	if !b.AllAcked() || b.data.count != 0 {
		t.Fatalf("AllAcked = %v, chunks %d, buffered %d", b.AllAcked(), b.data.count, b.Buffered())
	}
	if got := readAll(recv); !bytes.Equal(got, written) || !recv.Done() {
		t.Fatal("receiver did not get every byte")
	}
}

func TestSendSteadyStateNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	var b SendBuffer
	data := pattern(0, 1200)
	pkt := make([]byte, 0, 1500)
	allocs := testing.AllocsPerRun(1000, func() {
		b.Write(data)
		_, off, n, fin, _ := b.AppendFrameData(pkt[:0], 1200)
		b.OnAcked(off, n, fin)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Write+AppendFrameData+OnAcked, want 0", allocs)
	}
}
