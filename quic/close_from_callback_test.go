package quic

import (
	"errors"
	"testing"
)

// TestCloseWithErrorFromCallbacks: CloseWithError called from a callback
// the connection's goroutine makes (NotifyReadable, NotifyAcceptable, a
// final size) returns, and the peer gets the close. It waited for that
// goroutine to write the CONNECTION_CLOSE, that is for itself: the
// connection hung for good.
func TestCloseWithErrorFromCallbacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arm sets the callback on the server's side of the connection,
		// once its first stream is accepted; close is what it calls.
		arm func(sc *Conn, rs *ReceiveStream, close func())
	}{
		{"NotifyReadable", func(_ *Conn, rs *ReceiveStream, close func()) { rs.NotifyReadable(close) }},
		{"NotifyAcceptable", func(sc *Conn, _ *ReceiveStream, close func()) { sc.NotifyAcceptable(close) }},
		{"final size", func(_ *Conn, rs *ReceiveStream, close func()) {
			rs.SetReceiveFinalSizeCallback(func(int64) { close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				tr := &Transport{Conn: s.socket(simServerAddr)}
				t.Cleanup(func() { tr.Close() })
				ln, err := tr.Listen(serverTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
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
				if _, err := rs.Read(make([]byte, 1)); err != nil {
					t.Fatal(err)
				}
				returned := make(chan struct{})
				tc.arm(sc, rs, func() {
					if err := sc.CloseWithError(7, "from a callback"); err != nil {
						t.Error(err)
					}
					close(returned)
				})
				// What makes the callback run on the server's goroutine:
				// more data, the FIN, and a new stream.
				if _, err := str.Write([]byte("b")); err != nil {
					t.Fatal(err)
				}
				_ = str.Close()
				if _, err := c.OpenUniStream(); err != nil {
					t.Fatal(err)
				}
				if s2, err := c.OpenUniStream(); err == nil {
					_, _ = s2.Write([]byte("c"))
				}
				<-returned // the simulation's watchdog fails a hang
				<-c.Context().Done()
				var appErr *ApplicationError
				if err := connCause(c); !errors.As(err, &appErr) || appErr.ErrorCode != 7 || !appErr.Remote {
					t.Errorf("the client's connection ended with %v, want the server's application error 7", err)
				}
				<-sc.runDone
			})
		})
	}
}
