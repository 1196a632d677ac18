package udpio

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"
)

// The portable path is what non-Linux systems run; these tests exercise it everywhere.

func TestFallbackRoundTrip(t *testing.T) {
	dc := listenUDP(t, "udp", ":0") // dual-stack where the system allows it
	v4 := listenUDP(t, "udp4", "127.0.0.1:0")
	port := addrPort(dc).Port()
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	var want [][]byte
	var buf []byte
	for i := range 3 {
		want = append(want, payload(i, 700))
		buf = append(buf, want[i]...)
	}
	want = append(want, payload(3, 10))
	buf = append(buf, want[3]...)
	msgs := []Message{{Buf: buf, Addr: to, SegmentSize: 700}}
	if n, err := writeEach(v4, msgs); n != 1 || err != nil || msgs[0].N != len(buf) {
		t.Fatalf("writeEach = %d, %v (N=%d)", n, err, msgs[0].N)
	}
	dc.SetReadDeadline(time.Now().Add(hangGuard))
	in := []Message{{Buf: make([]byte, 2048), SegmentSize: 99, Local: to.Addr()}}
	for i := range want {
		n, err := readOne(dc, in)
		if n != 1 || err != nil {
			t.Fatalf("readOne = %d, %v", n, err)
		}
		m := in[0]
		if !bytes.Equal(m.Data(), want[i]) || m.Addr != addrPort(v4) || !m.Addr.Addr().Is4() {
			t.Fatalf("datagram %d: %d bytes from %v", i, m.N, m.Addr)
		}
		if m.SegmentSize != 0 || m.Local.IsValid() {
			t.Fatalf("stale fields kept: %+v", m)
		}
	}
	if n, err := readOne(dc, nil); n != 0 || err != nil {
		t.Fatalf("readOne(nil) = %d, %v", n, err)
	}
	bad := []Message{{Buf: []byte("x")}}
	if n, err := writeEach(v4, bad); n != 0 || !errors.Is(err, ErrInvalidAddr) {
		t.Fatalf("writeEach without address = %d, %v", n, err)
	}
	bad = []Message{{Buf: make([]byte, 100), Addr: to, SegmentSize: 1}}
	if n, err := writeEach(v4, bad); n != 0 || !errors.Is(err, ErrTooManySegments) {
		t.Fatalf("writeEach with 100 segments = %d, %v", n, err)
	}
}

// TestReaderDeadlineAndClose: ReadBatch honours the socket deadline and Close; it never
// hangs on a socket that has nothing to read.
func TestReaderDeadlineAndClose(t *testing.T) {
	c := listenUDP(t, "udp4", "127.0.0.1:0")
	r, err := NewReader(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Buf: make([]byte, 100)}}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := r.ReadBatch(msgs); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("past deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	w, err := NewWriter(c, WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.ReadBatch(msgs)
		done <- err
	}()
	c.Close()
	if err := <-done; err == nil {
		t.Fatal("ReadBatch on a closed socket returned no error")
	}
	if n, err := r.ReadBatch(nil); n != 0 || err != nil {
		t.Fatalf("ReadBatch(nil) = %d, %v", n, err)
	}
	if _, err := w.WriteBatch([]Message{{Buf: []byte("x"), Addr: netip.MustParseAddrPort("127.0.0.1:9")}}); err == nil {
		t.Fatal("WriteBatch on a closed socket returned no error")
	}
}
