package quic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// faultySocket is a harness endpoint whose WriteTo fails with
// io.ErrClosedPipe after maxWrites datagrams, persistently.
type faultySocket struct {
	simSocket
	maxWrites int

	mu       sync.Mutex
	writes   int
	failures []time.Time
}

func (f *faultySocket) WriteTo(b []byte, addr net.Addr) (int, error) {
	f.mu.Lock()
	f.writes++
	fail := f.writes > f.maxWrites
	if fail {
		f.failures = append(f.failures, time.Now())
	}
	f.mu.Unlock()
	if fail {
		return 0, &net.OpError{Op: "write", Net: "udp", Err: io.ErrClosedPipe}
	}
	return f.simSocket.WriteTo(b, addr)
}

// failedAt reports whether a write failed at the instant at (virtual
// time, so exactly).
func (f *faultySocket) failedAt(at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.failures, at.Equal)
}

// closeRecord is when and why a connection closed.
type closeRecord struct {
	at  time.Time
	err error
}

func recordClose(c *Conn) <-chan closeRecord {
	ch := make(chan closeRecord, 1)
	context.AfterFunc(c.Context(), func() { ch <- closeRecord{time.Now(), context.Cause(c.Context())} })
	return ch
}

// TestFaultyPacketConn: when one side's socket starts failing every write
// (its interface went away), that side's connection closes at once with
// the socket's error (at the instant of a failed write, not with an idle
// timeout later); a Dial whose first write fails returns that error. The
// other side times out. (The server's first failure may belong to a
// connection never accepted: the client's Initial flight is two datagrams.)
func TestFaultyPacketConn(t *testing.T) {
	data := testData(200_000, 11) // about 150 datagrams
	for _, side := range []string{"client", "server"} {
		for _, n := range []int{0, 4, 12} {
			t.Run(fmt.Sprintf("%s after %d", side, n), func(t *testing.T) {
				simTest(t, simLink, func(t *testing.T, s *sim) {
					testFaultyPacketConn(t, s, side == "client", n, data)
				})
			})
		}
	}
}

func testFaultyPacketConn(t *testing.T, s *sim, clientFails bool, n int, data []byte) {
	ctx := s.ctx()
	conf := &Config{HandshakeIdleTimeout: 2 * time.Second, MaxIdleTimeout: 2 * time.Second}
	var faulty *faultySocket
	socket := func(addr netip.AddrPort, fails bool) net.PacketConn {
		sock := s.socket(addr)
		if !fails {
			return sock
		}
		faulty = &faultySocket{simSocket: sock, maxWrites: n}
		return faulty
	}
	str := &Transport{Conn: socket(simServerAddr, !clientFails)}
	t.Cleanup(func() { str.Close() })
	ln, err := str.ListenEarly(serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	serverClosed := make(chan closeRecord, 1)
	go func() {
		sc, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		go func() { serverClosed <- <-recordClose(sc) }()
		st, err := sc.OpenUniStream()
		if err == nil {
			_, _ = st.Write(data)
			_ = st.Close()
		}
	}()
	ctr := &Transport{Conn: socket(simClientAddr(1), clientFails)}
	t.Cleanup(func() { ctr.Close() })
	clientErr := func() error {
		c, err := ctr.Dial(ctx, ln.Addr(), clientTLS(t), conf)
		if err != nil {
			return err
		}
		defer c.CloseWithError(0, "")
		st, err := c.AcceptUniStream(ctx)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(st)
		if err == nil && !bytes.Equal(got, data) {
			err = errors.New("wrong data")
		}
		return err
	}()
	clientDone := time.Now()
	// The server's connections at the moment the client gives up (its
	// last Initial came less than the handshake timeout before).
	atClientDone := str.Stats()
	if clientErr == nil {
		t.Fatal("the transfer succeeded over a failing socket")
	}
	var ne net.Error
	if clientFails {
		if !errors.Is(clientErr, io.ErrClosedPipe) {
			t.Fatalf("client: %v, want the socket's error", clientErr)
		}
		if !faulty.failedAt(clientDone) {
			t.Errorf("the client's connection closed at %v, when no write failed", clientDone)
		}
	} else if !errors.As(clientErr, &ne) || !ne.Timeout() {
		t.Fatalf("client: %v, want a timeout", clientErr)
	}
	select {
	case r := <-serverClosed:
		if !clientFails {
			if !errors.Is(r.err, io.ErrClosedPipe) {
				t.Fatalf("server: %v, want the socket's error", r.err)
			}
			if !faulty.failedAt(r.at) {
				t.Errorf("the server's connection closed at %v, when no write failed", r.at)
			}
		} else if !errors.As(r.err, &ne) || !ne.Timeout() {
			t.Fatalf("server: %v, want a timeout", r.err)
		}
	case <-ctx.Done():
		switch {
		case clientFails && n == 0:
			// The client's Initial never left: there is no server
			// connection.
		case !clientFails && n == 0:
			// The server's socket fails from the start: a connection
			// made from the first datagram of the client's two-datagram
			// Initial flight acknowledges it at once, that write fails
			// and the connection closes before the ClientHello is
			// complete, so none may ever reach Accept. What must hold:
			// the server tried to send, and held no connection when the
			// client gave up: each closed at its failed write, not with
			// its handshake timeout.
			if faulty.failureCount() == 0 {
				t.Fatal("the server never tried to send")
			}
			if st := atClientDone; st.Connections != 0 || st.Handshaking != 0 {
				t.Fatalf("the server held %d connections (%d handshaking) on a socket that cannot send", st.Connections, st.Handshaking)
			}
		default:
			t.Fatal("the server's connection did not close")
		}
	}
}

// failureCount is how many writes failed.
func (f *faultySocket) failureCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.failures)
}
