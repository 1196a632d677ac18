package quic

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAcceptAnyStream: one call returns peer streams of both directions,
// unidirectional ones first, and the close error once the connection is
// gone.
func TestAcceptAnyStream(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ln := s.listen(nil)
		c := s.dial(simClientAddr(1), ln.Addr(), nil)
		bidi, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		uni, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		for _, str := range []interface{ Write([]byte) (int, error) }{bidi, uni} {
			if _, err := str.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		sc, err := ln.Accept(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		ctx := s.ctx()
		str, rs, err := sc.AcceptAnyStream(ctx)
		if err != nil || str != nil || rs == nil || rs.StreamID() != uni.StreamID() {
			t.Fatalf("first: %v %v %v, want the unidirectional stream", str, rs, err)
		}
		str, rs, err = sc.AcceptAnyStream(ctx)
		if err != nil || rs != nil || str == nil || str.StreamID() != bidi.StreamID() {
			t.Fatalf("second: %v %v %v, want the bidirectional stream", str, rs, err)
		}
		c.CloseWithError(7, "bye")
		str, rs, err = sc.AcceptAnyStream(context.Background())
		var ae *ApplicationError
		if str != nil || rs != nil || !errors.As(err, &ae) || ae.ErrorCode != 7 {
			t.Fatalf("after close: %v %v %v, want the close error", str, rs, err)
		}
	})
}

// TestNotifyAcceptable: the callback runs once a peer stream waits to be
// accepted: at once when one waits already, later when the next arrives,
// never while none does.
func TestNotifyAcceptable(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ln := s.listen(nil)
		c := s.dial(simClientAddr(1), ln.Addr(), nil)
		open := func() {
			t.Helper()
			str, err := c.OpenUniStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := str.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		open()
		sc, err := ln.Accept(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		calls := make(chan struct{}, 4)
		notify := func() { calls <- struct{}{} }
		sc.NotifyAcceptable(notify)
		if len(calls) != 1 {
			t.Fatal("a stream waits, but no call at once")
		}
		if _, rs, err := sc.AcceptAnyStream(s.ctx()); err != nil || rs == nil {
			t.Fatalf("accept: %v %v", rs, err)
		}
		sc.NotifyAcceptable(notify)
		time.Sleep(time.Second)
		if len(calls) != 1 {
			t.Fatal("called with no stream waiting")
		}
		open()
		time.Sleep(time.Second)
		if len(calls) != 2 {
			t.Fatalf("%d calls after a stream arrived, want 2", len(calls))
		}
		open() // not armed: no call
		time.Sleep(time.Second)
		if len(calls) != 2 {
			t.Fatal("called without being asked")
		}
	})
}
