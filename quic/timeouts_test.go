package quic

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

var simLink = simnet.LinkConfig{Delay: 5 * time.Millisecond}

// sendTimes records when datagrams leave from, in virtual time since the
// call.
func (s *sim) sendTimes(from netip.AddrPort) func() []time.Duration {
	start := time.Now()
	var mu sync.Mutex
	var times []time.Duration
	s.tap(func(p *simnet.Packet) bool {
		if p.From == from {
			mu.Lock()
			times = append(times, time.Since(start))
			mu.Unlock()
		}
		return true
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(times)
	}
}

// TestHandshakeTimeout: against a server that never answers, the client
// retransmits its Initial flight on PTO (after 1 s, the initial RTT of
// 333 ms, and then once a second: a client's backoff stops at 1 s until
// the handshake is confirmed, see handshake_loss_test.go) and gives up
// exactly when the handshake idle timeout expires, with an
// IdleTimeoutError as in quic-go
// (issue 15; a HandshakeTimeoutError is for a handshake that hears from
// its peer but takes twice the handshake idle timeout, below).
func TestHandshakeTimeout(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		silent := s.socket(simServerAddr) // reads nothing, answers nothing
		sent := s.sendTimes(simClientAddr(1))
		start := time.Now()
		tr := s.transport(simClientAddr(1))
		_, err := tr.Dial(s.ctx(), silent.LocalAddr(), clientTLS(t), &Config{HandshakeIdleTimeout: 5 * time.Second})
		var ie *IdleTimeoutError
		if !errors.As(err, &ie) || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("got %v, want IdleTimeoutError", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("gave up after %v, want the 5 s handshake idle timeout", took)
		}
		flights := slices.Compact(sent())
		want := []time.Duration{0, 999 * time.Millisecond}
		for at := 1999 * time.Millisecond; at < 5*time.Second; at += time.Second {
			want = append(want, at)
		}
		if !slices.Equal(flights, want) {
			t.Errorf("Initial flights sent at %v, want %v", flights, want)
		}
	})
}

// A handshake that keeps hearing from its peer but takes twice the handshake
// idle timeout in all fails with HandshakeTimeoutError; silence fails first
// with IdleTimeoutError (the timers alone, on a connection nobody runs).
func TestHandshakeTimeoutTimers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		started, act time.Duration // ago
		want         error
	}{
		{"active but slow", 2*time.Second + time.Millisecond, 10 * time.Millisecond, &HandshakeTimeoutError{}},
		{"silent", 1500 * time.Millisecond, time.Second + time.Millisecond, &IdleTimeoutError{}},
		{"in time", 1500 * time.Millisecond, 10 * time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newOfflineConn(t)
			c.hs.complete, c.hs.confirmed = false, false
			c.config.HandshakeIdleTimeout = time.Second
			now := time.Now()
			c.stats.started, c.idle.lastActivity = now.Add(-tc.started), now.Add(-tc.act)
			c.mu.Lock()
			c.onTimers(now)
			err := c.close.err
			c.mu.Unlock()
			if (tc.want == nil) != (err == nil) || (err != nil && reflect.TypeOf(err) != reflect.TypeOf(tc.want)) {
				t.Fatalf("got %v, want %T", err, tc.want)
			}
		})
	}
}

func TestDialContextCanceled(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		silent := s.socket(simServerAddr)
		start := time.Now()
		dctx, cancel := context.WithTimeout(s.ctx(), 100*time.Millisecond)
		defer cancel()
		_, err := s.transport(simClientAddr(1)).Dial(dctx, silent.LocalAddr(), clientTLS(t), nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's error", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("Dial returned after %v, want 100ms", took)
		}
		// Issue 15: what Dial returns for a canceled context is its cause,
		// as in quic-go.
		cause := errors.New("the application gave up")
		cctx, ccancel := context.WithCancelCause(s.ctx())
		time.AfterFunc(50*time.Millisecond, func() { ccancel(cause) })
		if _, err := s.transport(simClientAddr(2)).Dial(cctx, silent.LocalAddr(), clientTLS(t), nil); err != cause {
			t.Fatalf("got %v, want the context's cause", err)
		}
	})
}

func TestStreamDeadlines(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		// A server that accepts no streams and reads nothing.
		ln, err := s.transport(simServerAddr).Listen(serverTLS(t), &Config{InitialStreamReceiveWindow: 10000, MaxStreamReceiveWindow: 10000})
		if err != nil {
			t.Fatal(err)
		}
		c := s.dial(simClientAddr(1), ln.Addr(), nil)
		st, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		// Nothing to read: the read deadline expires, at its time.
		start := time.Now()
		if err := st.SetReadDeadline(start.Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err = st.Read(make([]byte, 1))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read: %v", err)
		}
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Errorf("read returned after %v, want 50ms", took)
		}
		// Flow control and our send buffer fill up, and the write deadline
		// expires.
		start = time.Now()
		if err := st.SetWriteDeadline(start.Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err = st.Write(make([]byte, 4<<20))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write: %v", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("write returned after %v, want 100ms", took)
		}
		// A deadline in the past fails at once; clearing it works again.
		_ = st.SetDeadline(time.Now().Add(-time.Second))
		if _, err := st.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read with past deadline: %v", err)
		}
	})
}
