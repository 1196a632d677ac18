package quic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/qlogwriter"
)

// callbackLink is a link with enough round trip for receive windows to
// auto-tune.
var callbackLink = simnet.LinkConfig{Delay: 10 * time.Millisecond}

// smallWindows makes a transfer of a few MiB grow the connection window
// several times.
func smallWindows(allow func(*Conn, uint64) bool) *Config {
	return &Config{
		InitialConnectionReceiveWindow: 32 << 10,
		InitialStreamReceiveWindow:     32 << 10,
		MaxConnectionReceiveWindow:     4 << 20,
		AllowConnectionWindowIncrease:  allow,
	}
}

// connWindow returns c's connection receive window.
func connWindow(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flow.recv.Window()
}

// callIntoConn calls into c the way a resource manager does from its
// callbacks (libp2p's asks for the connection's state); with the
// connection's lock held by the caller, the first call never returns.
func callIntoConn(t *testing.T, c *Conn) {
	_ = c.ConnectionState()
	_ = c.ConnectionStats()
	if err := c.Context().Err(); err != nil {
		t.Errorf("callback on a closed connection: %v", err)
	}
}

// TestAllowWindowIncreaseCallsIntoConn: AllowConnectionWindowIncrease may
// call methods of the connection (a libp2p resource manager asks for its
// ConnectionState); with the callback run under the connection's lock the
// connection deadlocked at its first window growth. With quic-go as the
// peer, our client (download) and our server (upload) each grow their
// window through the callback and the transfer completes.
func TestAllowWindowIncreaseCallsIntoConn(t *testing.T) {
	const size = 3 << 20
	t.Run("client", func(t *testing.T) {
		simTest(t, callbackLink, func(t *testing.T, s *sim) {
			addr := s.quicGoServer(&quicgo.Config{})
			var asked, allowed atomic.Int64
			c := s.dial(simClientAddr(1), addr, smallWindows(func(c *Conn, delta uint64) bool {
				asked.Add(1)
				callIntoConn(t, c)
				// A stream opened from the callback works too.
				if st, err := c.OpenUniStream(); err == nil {
					_ = st.Close()
				}
				allowed.Add(int64(delta))
				return true
			}))
			echoOurs(t, s.ctx(), c, size)
			if asked.Load() == 0 {
				t.Fatal("AllowConnectionWindowIncrease was never asked")
			}
			if w := connWindow(c); w != 32<<10+uint64(allowed.Load()) {
				t.Fatalf("connection window %d, want the initial 32 KiB plus the %d bytes allowed", w, allowed.Load())
			}
		})
	})
	t.Run("server", func(t *testing.T) {
		simTest(t, callbackLink, func(t *testing.T, s *sim) {
			var asked atomic.Int64
			srv := s.server(nil, smallWindows(func(c *Conn, delta uint64) bool {
				asked.Add(1)
				callIntoConn(t, c)
				return true
			}))
			_, qc := s.dialQuicGo(simClientAddr(1), srv.addr)
			echoN(t, s.ctx(), qc, qc.OpenStreamSync, size)
			if asked.Load() == 0 {
				t.Fatal("AllowConnectionWindowIncrease was never asked")
			}
			if w := connWindow(srv.only(t)); w <= 32<<10 {
				t.Fatalf("server's connection window %d never grew", w)
			}
		})
	})
}

// TestAllowWindowIncreaseClosesConn: the callback may close the connection
// (CloseWithError waits until the connection goroutine wrote the
// CONNECTION_CLOSE); the transfer then fails with that error, and the
// closed connection asks no more.
func TestAllowWindowIncreaseClosesConn(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{})
		var asked atomic.Int64
		c := s.dial(simClientAddr(1), addr, smallWindows(func(c *Conn, delta uint64) bool {
			asked.Add(1)
			_ = c.CloseWithError(7, "over budget")
			return true
		}))
		err := echoErr(s.ctx(), c, c.OpenStreamSync, 3<<20)
		var appErr *ApplicationError
		if !errors.As(err, &appErr) || appErr.ErrorCode != 7 || appErr.Remote {
			t.Fatalf("transfer: %v, want our ApplicationError 7", err)
		}
		time.Sleep(time.Second)
		if n := asked.Load(); n != 1 {
			t.Fatalf("asked %d times, want once: a closed connection asked again", n)
		}
		if w := connWindow(c); w != 32<<10 {
			t.Fatalf("window %d: grew on a closed connection", w)
		}
	})
}

// blockingTokenStore's Put reports each call and waits until the test lets
// it go; Pop has nothing.
type blockingTokenStore struct {
	put     chan struct{}
	release chan struct{}
	stored  atomic.Int64
}

func (*blockingTokenStore) Pop(string) *ClientToken { return nil }

func (s *blockingTokenStore) Put(_ string, tok *ClientToken) {
	if tok == nil || len(tok.data) == 0 {
		panic("Put without a token")
	}
	s.stored.Add(1)
	select {
	case s.put <- struct{}{}:
	default:
	}
	<-s.release
}

// TestTokenStoreOutsideLock: the client gives NEW_TOKEN tokens to its
// TokenStore without holding the connection's lock, so the connection's
// methods work while Put runs (with Put under the lock, ConnectionState
// waited for it forever here).
func TestTokenStoreOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		store := &blockingTokenStore{put: make(chan struct{}, 1), release: make(chan struct{})}
		c := s.dial(simClientAddr(1), srv.addr, &Config{TokenStore: store})
		select {
		case <-store.put:
		case <-s.ctx().Done():
			t.Fatal("no NEW_TOKEN token was stored")
		}
		if st := c.ConnectionState(); !st.TLS.HandshakeComplete {
			t.Fatal("ConnectionState during Put: handshake not complete")
		}
		_ = c.ConnectionStats()
		close(store.release)
		echoOurs(t, s.ctx(), c, 64<<10)
		if store.stored.Load() == 0 {
			t.Fatal("no token stored")
		}
	})
}

// pauseOnce makes the first call after arm wait until the test, told by
// hit, calls into the connection and releases it.
type pauseOnce struct {
	armed   atomic.Bool
	hit     chan struct{}
	release chan struct{}
}

func newPauseOnce() *pauseOnce {
	return &pauseOnce{hit: make(chan struct{}), release: make(chan struct{})}
}

func (p *pauseOnce) maybePause() {
	if p.armed.CompareAndSwap(true, false) {
		close(p.hit)
		<-p.release
	}
}

// callWhilePaused arms p, runs a transfer on c until p paused a callback,
// calls into c meanwhile, and lets the callback and the transfer finish.
func callWhilePaused(t *testing.T, s *sim, c *Conn, p *pauseOnce) {
	p.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- echoErr(s.ctx(), c, c.OpenStreamSync, 256<<10) }()
	select {
	case <-p.hit:
	case <-s.ctx().Done():
		t.Fatal("the callback was never called during the transfer")
	}
	callIntoConn(t, c)
	close(p.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// pausingTrace is a Config.Tracer trace whose recorder pauses once.
type pausingTrace struct {
	p      *pauseOnce
	events atomic.Int64
	closed atomic.Bool
}

func (tr *pausingTrace) AddProducer() qlogwriter.Recorder { return tr }

func (tr *pausingTrace) RecordEvent(qlogwriter.Event) {
	if tr.closed.Load() {
		panic("event after Close")
	}
	tr.events.Add(1)
	tr.p.maybePause()
}

func (tr *pausingTrace) Close() error {
	tr.closed.Store(true)
	return nil
}

// TestTracerOutsideLock: the connection's Tracer recorder gets its events
// without the connection's lock held, so the connection's methods work
// while it runs (they waited for it forever when events were recorded
// under the lock), and it is closed when CloseWithError returns.
func TestTracerOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		trace := &pausingTrace{p: newPauseOnce()}
		c := s.dial(simClientAddr(1), srv.addr, &Config{
			Tracer: func(context.Context, bool, ConnectionID) qlogwriter.Trace { return trace },
		})
		callWhilePaused(t, s, c, trace.p)
		_ = c.CloseWithError(0, "")
		if !trace.closed.Load() || trace.events.Load() == 0 {
			t.Fatalf("after CloseWithError: recorder closed %v, %d events", trace.closed.Load(), trace.events.Load())
		}
	})
}

// pausingWriter is a Config.Qlog writer whose Write pauses once.
type pausingWriter struct {
	p      *pauseOnce
	mu     sync.Mutex
	buf    bytes.Buffer
	closed chan struct{}
}

func (w *pausingWriter) Write(b []byte) (int, error) {
	w.p.maybePause()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (w *pausingWriter) Close() error {
	close(w.closed)
	return nil
}

// TestQlogWriterOutsideLock: Config.Qlog's writer is written to without
// the connection's lock held, so the connection's methods work while a
// Write runs; the qlog is complete once the connection ends.
func TestQlogWriterOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		w := &pausingWriter{p: newPauseOnce(), closed: make(chan struct{})}
		c := s.dial(simClientAddr(1), srv.addr, &Config{
			Qlog: func(Perspective, []byte) io.WriteCloser { return w },
		})
		callWhilePaused(t, s, c, w.p)
		_ = c.CloseWithError(0, "")
		select {
		case <-w.closed:
		case <-s.ctx().Done():
			t.Fatal("the qlog writer was never closed")
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !bytes.Contains(w.buf.Bytes(), []byte("transport:connection_closed")) {
			t.Fatal("the qlog ends without connection_closed")
		}
	})
}

// TestConnectionIDAddedOutsideLock: Transport.ConnectionIDAdded is called
// without the connection's lock held, here for the IDs a new path's
// Transport routes (before, AddPath called it with the lock held).
func TestConnectionIDAddedOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		p := newPauseOnce()
		var added atomic.Int64
		tr2 := &Transport{Conn: s.socket(simClientAddr(2)), ConnectionIDAdded: func(cid []byte) {
			added.Add(1)
			p.maybePause()
		}}
		t.Cleanup(func() { tr2.Close() })
		p.armed.Store(true)
		path, err := c.AddPath(tr2)
		if err != nil {
			t.Fatal(err)
		}
		probed := make(chan error, 1)
		go func() { probed <- path.Probe(s.ctx()) }()
		select {
		case <-p.hit:
		case <-s.ctx().Done():
			t.Fatal("ConnectionIDAdded was never called for the new path")
		}
		callIntoConn(t, c)
		close(p.release)
		if err := <-probed; err != nil {
			t.Fatal(err)
		}
		if added.Load() == 0 {
			t.Fatal("no ID added")
		}
	})
}

// TestAddressPolicyOutsideLock: the AddressPolicy runs without the address
// validator's lock, so it may use the Transport's address-validation
// methods (SetTokenSecret took that lock: the receive goroutine hung).
func TestAddressPolicyOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		tr := &Transport{}
		var asked atomic.Int64
		tr.AddressValidation = &AddressValidationConfig{Policy: func(in *InitialInfo) AddressDecision {
			asked.Add(1)
			_ = tr.AddressValidationStats()
			// The same secret each time: the Retry token stays valid.
			if err := tr.SetTokenSecret(bytes.Repeat([]byte{7}, 32)); err != nil {
				t.Errorf("SetTokenSecret from the policy: %v", err)
			}
			return AddressRetry
		}}
		srv := s.server(tr, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, s.ctx(), c, 16<<10)
		if asked.Load() == 0 {
			t.Fatal("the policy was never asked")
		}
	})
}

// TestFinalSizeCallbackOutsideLock: a stream's final-size callback runs
// without the connection's lock, so it may call into the connection and
// the stream (it was called with the lock held: ConnectionState hung).
func TestFinalSizeCallbackOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		st, err := c.OpenStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		sizes := make(chan int64, 1)
		st.SetReceiveFinalSizeCallback(func(n int64) {
			callIntoConn(t, c)
			st.SetPriority(1, true)
			sizes <- n
		})
		data := make([]byte, 10000)
		if _, err := st.Write(data); err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
		select {
		case n := <-sizes:
			if n != int64(len(data)) {
				t.Fatalf("final size %d, want %d", n, len(data))
			}
		case <-s.ctx().Done():
			t.Fatal("the final-size callback was never called")
		}
		if got, err := io.ReadAll(st); err != nil || len(got) != len(data) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	})
}

// callingGenerator is a ConnectionIDGenerator that, once conn is set,
// calls into it from GenerateConnectionID and reports that on called.
type callingGenerator struct {
	countingGenerator
	t      *testing.T
	conn   atomic.Pointer[Conn]
	called chan struct{}
	once   sync.Once
}

func (g *callingGenerator) GenerateConnectionID() (ConnectionID, error) {
	if c := g.conn.Load(); c != nil {
		callIntoConn(g.t, c)
		g.once.Do(func() { close(g.called) })
	}
	return g.countingGenerator.GenerateConnectionID()
}

// TestConnectionIDGeneratorOutsideLock: the IDs a connection issues after
// the handshake (here the replacement of one the server retires when our
// client migrates) are made by the application's generator without the
// connection's lock (it ran under it: ConnectionState hung).
func TestConnectionIDGeneratorOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		gen := &callingGenerator{countingGenerator: countingGenerator{n: 8, tag: 0xcd}, t: t, called: make(chan struct{})}
		tr := &Transport{Conn: s.socket(simClientAddr(1)), ConnectionIDGenerator: gen}
		t.Cleanup(func() { tr.Close() })
		c, err := tr.Dial(s.ctx(), srv.addr, clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseWithError(0, "") })
		echoOurs(t, s.ctx(), c, 16<<10)
		gen.conn.Store(c)
		migrateOurClient(t, s.ctx(), c, s.socket(simClientAddr(2)))
		echoOurs(t, s.ctx(), c, 16<<10)
		select {
		case <-gen.called:
		case <-s.ctx().Done():
			t.Fatal("no ID was made after the migration")
		}
	})
}

// TestWriteWithLimitLimiterOutsideLock: WriteWithLimit's limiter runs
// without the connection's lock, so it may call into the connection and
// the stream (it ran under the lock while packets were built:
// ConnectionState hung). quic-go's server reads exactly the granted bytes.
func TestWriteWithLimitLimiterOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{})
		c := s.dial(simClientAddr(1), addr, nil)
		st, err := c.OpenStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		data := testData(20000, 9)
		var offered atomic.Int64
		n, err := st.WriteWithLimit(data, func(max int) int {
			callIntoConn(t, c)
			st.SetPriority(2, true)
			if offered.Add(int64(max)) > 10000 {
				return min(max, 100) // the budget runs out
			}
			return max
		})
		if !errors.Is(err, ErrWriteLimitReached) || n <= 10000-1500 || n >= len(data) {
			t.Fatalf("WriteWithLimit: %d, %v", n, err)
		}
		m, err := st.WriteWithLimit(data[n:], func(max int) int { _ = c.ConnectionStats(); return max })
		if err != nil || n+m != len(data) {
			t.Fatalf("second WriteWithLimit: %d, %v", m, err)
		}
		_ = st.Close()
		got, err := io.ReadAll(st) // the echo
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("echo: %d bytes, %v", len(got), err)
		}
	})
}

// TestWriteWithLimitFlowControlQuicGo is quic-go's
// TestWriteWithLimitStreamFlowControl in virtual time: with a 100-byte
// stream window the limiter is offered what flow control allows, and a
// later write finishes once quic-go extends the window.
func TestWriteWithLimitFlowControlQuicGo(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{InitialStreamReceiveWindow: 100, InitialConnectionReceiveWindow: 1 << 20})
		c := s.dial(simClientAddr(1), addr, nil)
		st, err := c.OpenStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		data := testData(101, 4)
		var offers []int
		n, err := st.WriteWithLimit(data, func(max int) int { offers = append(offers, max); return min(max, 25) })
		if n != 25 || !errors.Is(err, ErrWriteLimitReached) || len(offers) != 1 || offers[0] != 100 {
			t.Fatalf("WriteWithLimit: %d, %v, offers %v", n, err, offers)
		}
		if m, err := st.WriteWithLimit(data[n:], func(max int) int { return max }); err != nil || m != len(data)-n {
			t.Fatalf("second WriteWithLimit: %d, %v", m, err)
		}
		_ = st.Close()
		if got, err := io.ReadAll(st); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("echo: %d bytes, %v", len(got), err)
		}
	})
}

// TestNotifyCallbacksOutsideLock: NotifyAcceptable's callback, armed while
// no stream waits, and NotifyReadable's, armed from it, run on the
// connection's goroutine without its lock: they may call into the
// connection and the stream (an accept and a read from the callback would
// hang under the lock).
func TestNotifyCallbacksOutsideLock(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		ln := s.listen(nil)
		c := s.dial(simClientAddr(1), ln.Addr(), nil)
		sc, err := ln.Accept(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		read := make(chan string, 1)
		sc.NotifyAcceptable(func() {
			callIntoConn(t, sc)
			_, rs, err := sc.AcceptAnyStream(s.ctx())
			if err != nil {
				t.Errorf("accept from the callback: %v", err)
				return
			}
			rs.NotifyReadable(func() {
				callIntoConn(t, sc)
				b := make([]byte, 5)
				n, _ := rs.Read(b)
				read <- string(b[:n])
			})
		})
		str, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := str.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-read:
			if got == "" {
				t.Fatal("the readable callback read nothing")
			}
		case <-s.ctx().Done():
			t.Fatal("the callbacks were never called")
		}
	})
}
