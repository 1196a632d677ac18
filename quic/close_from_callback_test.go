package quic

import (
	"context"
	"errors"
	"testing"
	"time"
)

// openUniStream opens a stream from c, sends a byte on it, and returns it
// with the listener's connection and its side of the stream, the byte read.
func openUniStream(t *testing.T, s *sim, c *Conn, ln *Listener) (*SendStream, *Conn, *ReceiveStream) {
	t.Helper()
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
	return str, sc, rs
}

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
				ln := s.listen(nil)
				c := s.dial(simClientAddr(1), ln.Addr(), nil)
				str, sc, rs := openUniStream(t, s, c, ln)
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

// TestTransportCloseFromCallbacks: Transport.Close called from a callback
// of the receive goroutine (the address policy, ConnContext) or of a
// connection's (NotifyReadable) returns, and every goroutine of the
// Transport ends (the bubble would not). It waited for the goroutine
// making the call.
func TestTransportCloseFromCallbacks(t *testing.T) {
	for _, where := range []string{"AddressPolicy", "ConnContext", "NotifyReadable"} {
		t.Run(where, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				returned := make(chan struct{})
				tr := &Transport{Conn: s.socket(simServerAddr)}
				closeTr := func() {
					_ = tr.Close()
					close(returned)
				}
				switch where {
				case "AddressPolicy":
					tr.AddressValidation = &AddressValidationConfig{Policy: func(*InitialInfo) AddressDecision {
						closeTr()
						return AddressDrop
					}}
				case "ConnContext":
					tr.ConnContext = func(ctx context.Context, _ *ClientInfo) (context.Context, error) {
						closeTr()
						return ctx, nil
					}
				}
				ln, err := tr.Listen(serverTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(s.ctx(), 2*time.Second)
				defer cancel()
				c, err := s.transport(simClientAddr(1)).Dial(ctx, ln.Addr(), clientTLS(t), nil)
				if where != "NotifyReadable" {
					if err == nil {
						c.CloseWithError(0, "")
					}
					<-returned
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				str, sc, rs := openUniStream(t, s, c, ln)
				rs.NotifyReadable(closeTr)
				_, _ = str.Write([]byte("b"))
				<-returned
				<-sc.Context().Done()
			})
		})
	}
}

// TestTransportCloseDuringCallback: Close from another goroutine while a
// callback runs still returns only once the receive goroutine ended, when
// the callback returns within selfCloseGrace.
func TestTransportCloseDuringCallback(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		inPolicy, release := make(chan struct{}), make(chan struct{})
		tr := &Transport{Conn: s.socket(simServerAddr), AddressValidation: &AddressValidationConfig{Policy: func(*InitialInfo) AddressDecision {
			close(inPolicy)
			<-release
			return AddressDrop
		}}}
		ln, err := tr.Listen(serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			ctx, cancel := context.WithTimeout(s.ctx(), time.Second)
			defer cancel()
			_, _ = s.transport(simClientAddr(1)).Dial(ctx, ln.Addr(), clientTLS(t), nil)
		}()
		<-inPolicy
		go func() {
			time.Sleep(50 * time.Millisecond) // within selfCloseGrace
			close(release)
		}()
		_ = tr.Close()
		select {
		case <-tr.readDone:
		default:
			t.Fatal("Close returned before the receive goroutine ended")
		}
		select {
		case <-release:
		default:
			t.Fatal("Close returned while the policy still ran")
		}
	})
}

// closingStore is a TokenStore whose Put closes the connection it gets
// once the test has it.
type closingStore struct {
	TokenStore
	conn     chan *Conn
	returned chan struct{}
}

func (s *closingStore) Put(key string, tok *ClientToken) {
	s.TokenStore.Put(key, tok)
	c := <-s.conn
	_ = c.CloseWithError(9, "from Put")
	close(s.returned)
}

// TestCloseWithErrorFromTokenStorePut: the client's TokenStore.Put, which
// the connection's goroutine calls for a NEW_TOKEN frame, may close the
// connection.
func TestCloseWithErrorFromTokenStorePut(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		tr := &Transport{Conn: s.socket(simServerAddr), AddressValidation: &AddressValidationConfig{Policy: NeverRetry()}}
		t.Cleanup(func() { tr.Close() })
		ln, err := tr.Listen(serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		store := &closingStore{TokenStore: NewLRUTokenStore(4, 4), conn: make(chan *Conn, 1), returned: make(chan struct{})}
		c := s.dial(simClientAddr(1), ln.Addr(), &Config{TokenStore: store})
		store.conn <- c
		sc, err := ln.Accept(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		<-store.returned
		<-sc.Context().Done()
		var appErr *ApplicationError
		if err := connCause(sc); !errors.As(err, &appErr) || appErr.ErrorCode != 9 {
			t.Errorf("the server's connection ended with %v, want the client's application error 9", err)
		}
	})
}
