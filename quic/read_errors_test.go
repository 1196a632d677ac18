package quic

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scriptedReadConn is a harness socket whose reads first return the
// errors of its script, one a call (a nil entry reads one datagram from
// the socket), then forever, when set, the error stuck, and otherwise
// read the socket.
type scriptedReadConn struct {
	simSocket

	mu       sync.Mutex
	script   []error
	stuck    error
	failedAt []time.Time // when each scripted or stuck error was returned
}

func (c *scriptedReadConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.mu.Lock()
	var err error
	switch {
	case len(c.script) > 0:
		err, c.script = c.script[0], c.script[1:]
	case c.stuck != nil:
		err = c.stuck
	}
	if err != nil {
		c.failedAt = append(c.failedAt, time.Now())
	}
	c.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	return c.simSocket.ReadFrom(b)
}

// fail makes the next reads fail as script and stuck say.
func (c *scriptedReadConn) fail(script []error, stuck error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.script, c.stuck = script, stuck
}

// failures returns when the scripted errors were returned.
func (c *scriptedReadConn) failures() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.failedAt...)
}

// timeoutError is a read deadline's error.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// readErr is err as a UDP socket's read returns it.
func readErr(errno syscall.Errno) error {
	return &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvfrom", errno)}
}

func TestReadErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		err        error
		persistent bool
	}{
		{&net.OpError{Op: "read", Net: "udp", Err: net.ErrClosed}, true},
		{readErr(syscall.EBADF), true},
		{readErr(syscall.ENOTSOCK), true},
		{errors.New("an application's socket broke"), true},
		{readErr(syscall.ECONNREFUSED), false},
		{readErr(syscall.EHOSTUNREACH), false},
		{readErr(syscall.ENOBUFS), false},
		{readErr(syscall.EINTR), false},
		{&net.OpError{Op: "read", Net: "udp", Err: timeoutError{}}, false},
		{syscall.ECONNREFUSED, false}, // a bare Errno is a net.Error
	} {
		if got := persistentReadError(tc.err); got != tc.persistent {
			t.Errorf("persistentReadError(%v) = %v, want %v", tc.err, got, tc.persistent)
		}
	}
	prev := time.Duration(0)
	for n := 1; n <= 100; n++ {
		d := readBackoff(n)
		if d < prev || d < minReadBackoff || d > maxReadBackoff {
			t.Fatalf("readBackoff(%d) = %v after %v: want non-decreasing within [%v, %v]", n, d, prev, minReadBackoff, maxReadBackoff)
		}
		prev = d
	}
	if readBackoff(maxReadFailures) != maxReadBackoff {
		t.Errorf("readBackoff(%d) = %v, want the cap %v", maxReadFailures, readBackoff(maxReadFailures), maxReadBackoff)
	}
}

// checkBackoff fails t unless the failures came readBackoff(1), (2), ...
// apart (virtual time: exactly).
func checkBackoff(t *testing.T, at []time.Time) {
	t.Helper()
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap != readBackoff(i) {
			t.Errorf("failure %d came %v after the one before, want %v", i+1, gap, readBackoff(i))
		}
	}
}

// Temporary read errors, one short of the bound in a row, twice, with a
// datagram read in between, cost the server pauses but not its Transport:
// the connection goes on, and the second run of errors starts the backoff
// over.
func TestTemporaryReadErrorsRetried(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		sock := &scriptedReadConn{simSocket: s.socket(simServerAddr)}
		tr := &Transport{Conn: sock}
		t.Cleanup(func() { tr.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		srv := serveEcho(t, ctx, tr, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, s.ctx(), c, 1000)

		burst := func(errs ...error) []error {
			var b []error
			for len(b) < maxReadFailures-1 {
				b = append(b, errs[len(b)%len(errs)])
			}
			return b
		}
		first := burst(readErr(syscall.ECONNREFUSED), readErr(syscall.ENOBUFS), &net.OpError{Op: "read", Net: "udp", Err: timeoutError{}})
		second := burst(readErr(syscall.EHOSTUNREACH), readErr(syscall.EINTR))
		// The read loop waits in ReadFrom: the script starts with the
		// read after the next datagram.
		sock.fail(append(append(append([]error{nil}, first...), nil), second...), nil)
		echoOurs(t, s.ctx(), c, 1000)
		time.Sleep(10 * time.Second) // the rest of the script, at most 6 s of pauses
		echoOurs(t, s.ctx(), c, 1000)

		if tr.isClosed() {
			t.Fatalf("temporary errors closed the Transport: %v", tr.closedErr())
		}
		at := sock.failures()
		if want := len(first) + len(second); len(at) != want {
			t.Fatalf("%d reads failed, want %d", len(at), want)
		}
		checkBackoff(t, at[:len(first)])
		checkBackoff(t, at[len(first):])
		if err := srv.only(t).Context().Err(); err != nil {
			t.Errorf("the server's connection ended: %v", context.Cause(srv.only(t).Context()))
		}
	})
}

// A persistent read error, or a temporary one that never stops, closes the
// Transport with that error: the listener and the connection on it report
// it (wrapped in ErrTransportClosed), the read loop stops reading (no
// spinning), and no goroutine is left (simTest checks).
func TestPersistentReadErrorClosesTransport(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		reads int // the failed reads before the Transport gives up
	}{
		{"closed", &net.OpError{Op: "read", Net: "udp", Err: net.ErrClosed}, 1},
		{"EBADF", readErr(syscall.EBADF), 1},
		{"application", errors.New("an application's socket broke"), 1},
		{"timeout forever", &net.OpError{Op: "read", Net: "udp", Err: timeoutError{}}, maxReadFailures},
		{"ENOBUFS forever", readErr(syscall.ENOBUFS), maxReadFailures},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				sock := &scriptedReadConn{simSocket: s.socket(simServerAddr)}
				tr := &Transport{Conn: sock}
				t.Cleanup(func() { tr.Close() })
				ln, err := tr.Listen(serverTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				c := s.dial(simClientAddr(1), ln.Addr(), nil)
				sc, err := ln.Accept(s.ctx())
				if err != nil {
					t.Fatal(err)
				}
				sock.fail([]error{nil}, tc.err)
				// A packet for the server ends its read loop's wait.
				ping, err := c.OpenStream()
				if err != nil {
					t.Fatal(err)
				}
				_, _ = ping.Write([]byte("x"))

				select {
				case <-sc.Context().Done():
				case <-s.ctx().Done():
					t.Fatal("the server's connection did not end")
				}
				want := func(what string, got error) {
					t.Helper()
					if !errors.Is(got, ErrTransportClosed) || !errors.Is(got, tc.err) {
						t.Errorf("%s: %v, want ErrTransportClosed with %v", what, got, tc.err)
					}
				}
				want("the server connection's close cause", context.Cause(sc.Context()))
				_, err = ln.Accept(s.ctx())
				want("Accept", err)
				_, err = tr.Dial(s.ctx(), c.LocalAddr(), clientTLS(t), nil)
				want("Dial", err)
				time.Sleep(time.Minute) // a loop still reading would fail again
				if got := len(sock.failures()); got != tc.reads {
					t.Errorf("%d reads failed, want %d", got, tc.reads)
				}
				checkBackoff(t, sock.failures())
			})
		})
	}
}
