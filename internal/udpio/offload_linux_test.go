package udpio

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hasSegmentCmsg reports whether slot i of the Writer's next sendmmsg carries UDP_SEGMENT,
// read back with the unix package's own parser.
func hasSegmentCmsg(w *Writer, i int) bool {
	ctrl := w.ctrl[i*txControlSize:]
	msgs, err := unix.ParseSocketControlMessage(ctrl[:w.hdrs[i].Hdr.Controllen])
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_SEGMENT {
			return true
		}
	}
	return false
}

// TestGSOToPlainReceiver: one WriteBatch of one 10 x 1200-byte GSO buffer arrives as 10
// datagrams at a receiver that uses nothing from this package.
func TestGSOToPlainReceiver(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	caps := setupConn(t, sc, Config{})
	if !caps.GSO {
		t.Skip("kernel does not support UDP GSO (UDP_SEGMENT)")
	}
	w, err := NewWriter(sc, WriterConfig{GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls, slots int
	var sawSegment bool
	w.sendmmsg = func(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
		calls++
		slots += len(hdrs)
		sawSegment = hasSegmentCmsg(w, 0)
		return sendmmsg(fd, hdrs)
	}
	var want [][]byte
	var buf []byte
	for i := range 10 {
		want = append(want, payload(i, 1200))
		buf = append(buf, want[i]...)
	}
	msgs := []Message{{Buf: buf, Addr: addrPort(rc), SegmentSize: 1200}}
	if n, err := w.WriteBatch(msgs); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if calls != 1 || slots != 1 || !sawSegment || !w.GSOEnabled() {
		t.Fatalf("expected one sendmmsg with one UDP_SEGMENT buffer; calls=%d slots=%d segment=%v", calls, slots, sawSegment)
	}
	if msgs[0].N != len(buf) {
		t.Fatalf("N = %d, want %d", msgs[0].N, len(buf))
	}
	if err := rc.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	rb := make([]byte, GROBufferSize)
	for i := range want {
		n, from, err := rc.ReadFromUDPAddrPort(rb)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if !bytes.Equal(rb[:n], want[i]) || from != addrPort(sc) {
			t.Fatalf("datagram %d: %d bytes from %v, want 1200 bytes from %v", i, n, from, addrPort(sc))
		}
	}
}

// TestGROCoalesces: a GRO receiver gets the GSO burst as a coalesced buffer with the
// segment size, and the split helper gives back the original datagrams.
func TestGROCoalesces(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		t.Run(tc.network, func(t *testing.T) {
			sc := listenUDP(t, tc.network, tc.addr)
			rc := listenUDP(t, tc.network, tc.addr)
			scaps := setupConn(t, sc, Config{DisableGRO: true})
			rcaps := setupConn(t, rc, Config{})
			if !scaps.GSO || !rcaps.GRO {
				t.Skipf("kernel lacks UDP GSO (%v) or UDP_GRO (%v)", scaps.GSO, rcaps.GRO)
			}
			w, r := writerReader(t, sc, WriterConfig{GSO: true}, rc, 4)
			var want [][]byte
			var buf []byte
			for i := range 11 {
				size := 1200
				if i == 10 {
					size = 500
				}
				want = append(want, payload(i, size))
				buf = append(buf, want[i]...)
			}
			if n, err := w.WriteBatch([]Message{{Buf: buf, Addr: addrPort(rc), SegmentSize: 1200}}); n != 1 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			rc.SetReadDeadline(time.Now().Add(hangGuard))
			msgs := []Message{{Buf: make([]byte, GROBufferSize)}, {Buf: make([]byte, GROBufferSize)}}
			var got [][]byte
			coalesced := false
			for len(got) < len(want) {
				n, err := r.ReadBatch(msgs)
				if err != nil {
					t.Fatalf("ReadBatch after %d datagrams: %v", len(got), err)
				}
				for _, m := range msgs[:n] {
					if m.SegmentSize == 1200 && m.N > m.SegmentSize {
						coalesced = true
					}
					for _, d := range m.Datagrams(nil) {
						got = append(got, bytes.Clone(d))
					}
				}
			}
			if !coalesced {
				t.Fatal("GRO is on but no coalesced buffer with segment size 1200 arrived")
			}
			if len(got) != len(want) {
				t.Fatalf("got %d datagrams, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("datagram %d differs (%d bytes, want %d)", i, len(got[i]), len(want[i]))
				}
			}
		})
	}
}

func TestGSOUnsupportedDecision(t *testing.T) {
	cases := []struct {
		errno unix.Errno
		gso   bool
		want  bool
	}{
		{unix.EIO, true, true},
		{unix.EIO, false, false},
		{unix.EINVAL, true, false},
		{unix.EMSGSIZE, true, false},
		{0, true, false},
	}
	for _, c := range cases {
		if got := gsoUnsupported(c.errno, c.gso); got != c.want {
			t.Errorf("gsoUnsupported(%v, %v) = %v", c.errno, c.gso, got)
		}
	}
}

// TestGSOFallbackOnEIO injects the EIO a device without checksum offload produces: the
// Writer turns GSO off, resends the same buffer segment by segment, and never tries GSO
// again.
func TestGSOFallbackOnEIO(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	setupConn(t, rc, Config{DisableGRO: true})
	w, err := NewWriter(sc, WriterConfig{GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	// Like the kernel: slots before the failing one are sent, and the error is only
	// reported when the failing slot comes first.
	eio := 0
	w.sendmmsg = func(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
		for i := range hdrs {
			if !hasSegmentCmsg(w, i) {
				continue
			}
			if i == 0 {
				eio++
				return -1, unix.EIO
			}
			return sendmmsg(fd, hdrs[:i])
		}
		return sendmmsg(fd, hdrs)
	}
	r, err := NewReader(rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	var gsoBuf []byte
	for i := range 5 {
		want = append(want, payload(i, 1000))
		gsoBuf = append(gsoBuf, want[i]...)
	}
	want = append(want, payload(5, 300))
	msgs := []Message{
		{Buf: want[5], Addr: addrPort(rc)},
		{Buf: gsoBuf, Addr: addrPort(rc), SegmentSize: 1000},
	}
	// The plain datagram goes first, so the GSO buffer fails in a later sendmmsg slot.
	want = append([][]byte{want[5]}, want[:5]...)
	if n, err := w.WriteBatch(msgs); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if eio != 1 || w.GSOEnabled() {
		t.Fatalf("after EIO: %d GSO attempts, GSOEnabled=%v; want 1, false", eio, w.GSOEnabled())
	}
	if msgs[1].N != len(gsoBuf) {
		t.Fatalf("N = %d, want %d", msgs[1].N, len(gsoBuf))
	}
	checkDatagrams(t, readDatagrams(t, rc, r, len(want), 2048), want, addrPort(sc))
	// Later batches split in user space straight away.
	if n, err := w.WriteBatch(msgs[1:]); n != 1 || err != nil {
		t.Fatalf("second WriteBatch = %d, %v", n, err)
	}
	if eio != 1 {
		t.Fatalf("GSO tried again after it was turned off (%d attempts)", eio)
	}
	checkDatagrams(t, readDatagrams(t, rc, r, 5, 2048), want[1:], addrPort(sc))
}

// TestSendErrorsAreReported: a kernel error other than EIO-with-GSO is returned with the
// index of the failing message, and GSO stays on.
func TestSendErrorsAreReported(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	w, err := NewWriter(sc, WriterConfig{GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	w.sendmmsg = func(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
		calls++
		if calls == 1 {
			return sendmmsg(fd, hdrs[:1]) // the kernel took only one slot
		}
		if calls == 2 {
			return -1, unix.EIO // EIO without UDP_SEGMENT: a real error
		}
		return -1, unix.EINVAL
	}
	msgs := []Message{
		{Buf: []byte("one"), Addr: addrPort(rc)},
		{Buf: []byte("two"), Addr: addrPort(rc)},
		{Buf: []byte("three"), Addr: addrPort(rc)},
	}
	n, err := w.WriteBatch(msgs)
	if n != 1 || !errorsIs(err, unix.EIO) {
		t.Fatalf("WriteBatch = %d, %v; want 1, EIO", n, err)
	}
	if !w.GSOEnabled() {
		t.Fatal("GSO turned off by an EIO on a send without UDP_SEGMENT")
	}
	n, err = w.WriteBatch(msgs[2:])
	if n != 0 || !errorsIs(err, unix.EINVAL) {
		t.Fatalf("WriteBatch = %d, %v; want 0, EINVAL", n, err)
	}
}

// TestPartialSendResumes: when sendmmsg takes fewer slots than offered, the Writer goes
// on from the first unsent slot, also in the middle of a message split into segments.
func TestPartialSendResumes(t *testing.T) {
	sc := listenUDP(t, "udp6", "[::1]:0")
	rc := listenUDP(t, "udp6", "[::1]:0")
	setupConn(t, rc, Config{DisableGRO: true})
	w, err := NewWriter(sc, WriterConfig{Batch: 4, GSO: false})
	if err != nil {
		t.Fatal(err)
	}
	w.sendmmsg = func(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
		return sendmmsg(fd, hdrs[:min(len(hdrs), 3)])
	}
	r, err := NewReader(rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	dgrams, groups := mixedDatagrams()
	msgs := messagesFor(dgrams, groups, true, addrPort(rc))
	if n, err := w.WriteBatch(msgs); n != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	for i, m := range msgs {
		if m.N != len(m.Buf) {
			t.Fatalf("message %d: N = %d, want %d", i, m.N, len(m.Buf))
		}
	}
	checkDatagrams(t, readDatagrams(t, rc, r, len(dgrams), 2048), dgrams, addrPort(sc))
}
