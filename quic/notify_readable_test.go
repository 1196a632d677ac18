package quic

import (
	"io"
	"testing"
	"time"
)

// TestNotifyReadable: the callback runs once data is there, not before;
// at once when data is there already; and for the FIN alone.
func TestNotifyReadable(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ln := s.listen(nil)
		c := s.dial(simClientAddr(1), ln.Addr(), nil)
		str, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := str.Write([]byte("a")); err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := sc.AcceptUniStream(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		rs.NotifyReadable(func() { calls++ })
		if calls != 1 {
			t.Fatalf("data waiting: %d calls, want 1 at once", calls)
		}
		if _, err := io.ReadFull(rs, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}

		fired := make(chan struct{}, 2)
		rs.NotifyReadable(func() { fired <- struct{}{} })
		time.Sleep(time.Second)
		if len(fired) != 0 {
			t.Fatal("called with nothing to read")
		}
		if _, err := str.Write([]byte("b")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if len(fired) != 1 {
			t.Fatalf("%d calls after data arrived, want 1", len(fired))
		}
		if _, err := io.ReadFull(rs, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		rs.NotifyReadable(func() { fired <- struct{}{} })
		str.Close()
		time.Sleep(time.Second)
		if len(fired) != 2 {
			t.Fatal("not called for the FIN")
		}
		if n, err := rs.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("read after the FIN: %d, %v", n, err)
		}
		// A canceled callback is not called.
		str2, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := str2.Write([]byte("c")); err != nil {
			t.Fatal(err)
		}
		rs2, err := sc.AcceptUniStream(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rs2, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		rs2.NotifyReadable(func() { fired <- struct{}{} })
		rs2.NotifyReadable(nil)
		if _, err := str2.Write([]byte("d")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if len(fired) != 2 {
			t.Fatal("a canceled callback was called")
		}
	})
}
