package quic

import (
	"context"
	"io"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// slowOrEcho serves a stream by its first byte: 'S' gets an endless
// response (a large file to a client that may never read it), 'E' the echo
// of everything.
func slowOrEcho(s *Stream) {
	var b [1]byte
	if _, err := io.ReadFull(s, b[:]); err != nil {
		return
	}
	if b[0] == 'E' {
		if _, err := s.Write(b[:]); err == nil {
			echo(s)
		}
		return
	}
	chunk := make([]byte, 32<<10) // io.Copy's buffer size
	for {
		if _, err := s.Write(chunk); err != nil {
			return
		}
	}
}

// budgetServer runs a Transport with a listener serving slowOrEcho.
func budgetServer(t *testing.T, ctx context.Context, tr *Transport, conf *Config) {
	t.Helper()
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	serveStreams(ctx, ln.Accept, slowOrEcho)
}

// benignEcho dials the server with our client and echoes n bytes.
func benignEcho(t *testing.T, ctx context.Context, addr string, n int) {
	t.Helper()
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatalf("benign client: %v", err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := echoStream(s, append([]byte{'E'}, testData(n, 1)...)); err != nil {
		t.Fatalf("benign echo: %v", err)
	}
}

// TestSlowReadersBounded: quic-go clients with 16 KiB stream windows open
// 100 streams each, ask for an endless response and never read it. Each of
// the server's writers blocks once it queued the peer's window (with 1 MiB
// per stream as before, the 200 streams would pin 200 MiB); the server's
// buffered send data and heap stay bounded, and a benign client completes
// meanwhile.
func TestSlowReadersBounded(t *testing.T) {
	const conns, streams, window = 2, 100, 16 << 10
	ctx := testCtx(t)
	heapBefore := heapInUse()
	tr := &Transport{Conn: listenUDP(t)}
	budgetServer(t, ctx, tr, nil)
	addr := tr.Conn.LocalAddr().String()
	qconf := &quicgo.Config{
		InitialStreamReceiveWindow:     window,
		MaxStreamReceiveWindow:         window,
		InitialConnectionReceiveWindow: 2 * streams * window, // every stream gets its window
		MaxConnectionReceiveWindow:     2 * streams * window,
		MaxIdleTimeout:                 time.Minute,
	}
	for range conns {
		c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), qconf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseWithError(0, "") })
		for range streams {
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte{'S'}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every stream's window went out and was acknowledged, and its writer
	// (32 KiB at a time) queued nothing beyond it.
	waitFor(t, "every slow stream at its bound", func() bool {
		return streamsAtCredit(tr) == conns*streams && tr.Stats().SendBuffered == 0
	})
	st := tr.Stats()
	grown := int64(heapInUse()) - int64(heapBefore)
	t.Logf("%d slow-reader streams: heap +%d KiB (both sides), %+v", conns*streams, grown>>10, st)
	// At most a window in flight per stream, ever.
	if limit := int64(conns * streams * window); st.SendBufferedPeak > limit {
		t.Errorf("send data buffered peaked at %d, over %d", st.SendBufferedPeak, limit)
	}
	if st.SendBudgetWaits != 0 {
		t.Errorf("%d writes waited for a budget: flow control alone should hold them", st.SendBudgetWaits)
	}
	if grown > 32<<20 {
		t.Errorf("heap grew by %d MiB for %d slow-reader streams", grown>>20, conns*streams)
	}
	benignEcho(t, ctx, addr, 1<<20)
	if st := tr.Stats(); st.SendBuffered > 1<<20 {
		t.Errorf("send data buffered %d after the benign echo, want at most %d", st.SendBuffered, 1<<20)
	}
}

// TestSendBudgetsWait: with a connection budget (and, separately, a
// Transport budget) far below what flow control allows, a download
// completes, writers waited for the budget, and the buffered data never
// exceeded it.
func TestSendBudgetsWait(t *testing.T) {
	const budget = 128 << 10
	for _, tc := range []struct {
		name string
		tr   *Transport
		conf *Config
	}{
		{"connection", &Transport{}, &Config{MaxConnectionSendBuffer: budget}},
		{"transport", &Transport{MaxSendBuffer: budget}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			tc.tr.Conn = listenUDP(t)
			budgetServer(t, ctx, tc.tr, tc.conf)
			c, err := DialAddr(ctx, tc.tr.Conn.LocalAddr().String(), clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte{'S'}); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(s, make([]byte, 8<<20)); err != nil {
				t.Fatal(err)
			}
			s.CancelRead(0)
			st := tc.tr.Stats()
			t.Logf("%+v", st)
			if st.SendBudgetWaits == 0 {
				t.Error("no write waited for the budget")
			}
			if st.SendBufferedPeak > budget {
				t.Errorf("buffered send data peaked at %d, over the %d budget", st.SendBufferedPeak, budget)
			}
		})
	}
}

// streamsAtCredit counts the streams of tr's connections that have sent
// all the peer's flow control allows and hold nothing queued beyond it.
func streamsAtCredit(tr *Transport) int {
	tr.mu.Lock()
	conns := map[*Conn]bool{}
	for _, c := range tr.handlers {
		conns[c] = true
	}
	tr.mu.Unlock()
	n := 0
	for c := range conns {
		c.mu.Lock()
		for _, s := range c.streams.all {
			if s.fcSend.Used() > 0 && s.fcSend.Available() == 0 && s.send.Unsent() == 0 {
				n++
			}
		}
		c.mu.Unlock()
	}
	return n
}
