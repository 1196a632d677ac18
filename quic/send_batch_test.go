package quic

import (
	"bytes"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/turboretry/turboretry/internal/protocol"
)

// queueTestDatagram builds a datagram of size bytes of fill in a buffer of
// datagramBuffer and queues it, as buildDatagram and sendLocked do.
func queueTestDatagram(s *sendState, size int, fill byte, ecn protocol.ECN) {
	b := s.datagramBuffer()
	s.queueDatagram(append(b, bytes.Repeat([]byte{fill}, size)...), ecn)
}

// TestGSOMessagesInPlace: a run's datagrams are built one after the other
// in its arena, and a run of equal-size ones (the last may be shorter)
// goes out as a GSO buffer that is that part of the arena, not a copy; a
// datagram from the pool, a change of ECN mark or of size starts another
// message, and the arena goes back once written.
func TestGSOMessagesInPlace(t *testing.T) {
	var s sendState
	s.openArena()
	arena := s.arena
	queueTestDatagram(&s, 1452, 1, protocol.ECNNotECT)
	queueTestDatagram(&s, 1452, 2, protocol.ECNNotECT)
	queueTestDatagram(&s, 1000, 3, protocol.ECNNotECT) // ends the first run
	queueTestDatagram(&s, 1200, 4, protocol.ECNECT0)
	queueTestDatagram(&s, 1200, 5, protocol.ECNECT0)
	s.closeArena()
	if s.arena != nil || arena.used != 2*1452+1000+2*1200 {
		t.Fatalf("arena after the run: %v, %d bytes used", s.arena, arena.used)
	}
	// A datagram built outside sendLocked comes from the pool.
	queueTestDatagram(&s, 1200, 6, protocol.ECNNotECT)
	if !s.pending[5].pooled || s.pending[5].arena != nil {
		t.Fatal("a datagram built outside sendLocked is not pooled")
	}

	var b sendBatch
	ap := netip.MustParseAddrPort("192.0.2.1:443")
	msgs := b.gsoMessages(nil, s.pending, ap)
	type want struct {
		size, seg int
		first     byte
		inArena   int // offset in the arena, -1: a copy
	}
	wants := []want{{2*1452 + 1000, 1452, 1, 0}, {2 * 1200, 1200, 4, 2*1452 + 1000}, {1200, 0, 6, -1}}
	if len(msgs) != len(wants) {
		t.Fatalf("%d messages, want %d", len(msgs), len(wants))
	}
	for i, w := range wants {
		m := msgs[i]
		if len(m.Buf) != w.size || m.SegmentSize != w.seg || m.Buf[0] != w.first || m.Addr != ap {
			t.Errorf("message %d: %d bytes, segments of %d, first byte %d, want %+v", i, len(m.Buf), m.SegmentSize, m.Buf[0], w)
		}
		if in := &m.Buf[0] == &arena.buf[max(w.inArena, 0)]; in != (w.inArena >= 0) {
			t.Errorf("message %d in the arena: %v, want %v", i, in, w.inArena >= 0)
		}
	}
	if msgs[1].ECN != protocol.ECNECT0 || msgs[0].ECN != protocol.ECNNotECT {
		t.Errorf("ECN marks %v, %v", msgs[0].ECN, msgs[1].ECN)
	}
	// The last datagram of the first run is its own content, right after
	// the full-size ones.
	if got := msgs[0].Buf[2*1452:]; !bytes.Equal(got, bytes.Repeat([]byte{3}, 1000)) {
		t.Error("the short datagram of the first run is not in place")
	}
}

// TestGSOMessagesCopyWhenApart: datagrams that do not lie back to back
// (two arenas, or a gap) are copied into one GSO buffer as before.
func TestGSOMessagesCopyWhenApart(t *testing.T) {
	var s sendState
	for fill := range byte(2) {
		s.openArena()
		queueTestDatagram(&s, 1200, fill+1, protocol.ECNNotECT)
		s.closeArena()
	}
	if s.pending[0].arena == s.pending[1].arena {
		t.Fatal("two runs shared an arena")
	}
	var b sendBatch
	msgs := b.gsoMessages(nil, s.pending, netip.MustParseAddrPort("192.0.2.1:443"))
	if len(msgs) != 1 || len(msgs[0].Buf) != 2400 || msgs[0].SegmentSize != 1200 ||
		msgs[0].Buf[0] != 1 || msgs[0].Buf[1200] != 2 {
		t.Fatalf("messages %d, first %d bytes", len(msgs), len(msgs[0].Buf))
	}
	if &msgs[0].Buf[0] == &s.pending[0].arena.buf[0] {
		t.Fatal("datagrams of two arenas sent from the first")
	}
}

// TestPendingKeptAcrossRuns: a full run's datagrams fit a slice that run
// keeps for the next run (capacity at most maxDatagramsPerRun), so steady
// sending allocates nothing; a few datagrams keep a small one; and the
// entries stay as small as before the arena fields (88 bytes on 64-bit).
func TestPendingKeptAcrossRuns(t *testing.T) {
	var s sendState
	s.openArena()
	for range 3 {
		queueTestDatagram(&s, 1200, 1, protocol.ECNNotECT)
	}
	if c := cap(s.pending); c > 4 {
		t.Errorf("3 datagrams: capacity %d", c)
	}
	for len(s.pending) < maxDatagramsPerRun {
		queueTestDatagram(&s, 1200, 1, protocol.ECNNotECT)
	}
	s.closeArena()
	if c := cap(s.pending); c > maxDatagramsPerRun {
		t.Errorf("a full run: capacity %d, more than %d", c, maxDatagramsPerRun)
	}
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(outDatagram{}) > 88 {
		t.Errorf("outDatagram is %d bytes", unsafe.Sizeof(outDatagram{}))
	}
}
