package quic

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/qlogwriter"
)

// slowCloseQlog is a qlog writer whose Close takes a millisecond (of the
// bubble's virtual time), as flushing a file may: an application that sees
// the close before the trace ended would find the writer still open.
type slowCloseQlog struct{ *memQlog }

func (w slowCloseQlog) Close() error {
	time.Sleep(time.Millisecond)
	return w.memQlog.Close()
}

// checkQlogEnded fails t unless w was closed already and holds a whole
// trace that ends with connection_closed of initiator.
func checkQlogEnded(t *testing.T, w *memQlog, initiator string) {
	t.Helper()
	select {
	case <-w.done:
	default:
		t.Fatal("the application saw the close before the qlog writer was closed")
	}
	_, events := parseQlog(t, w.bytes())
	s := summarize(events)
	checkEndsWithClose(t, events, s)
	if s.closed["initiator"] != initiator {
		t.Fatalf("connection_closed %v, want initiator %s", s.closed, initiator)
	}
	if last := events[len(events)-1]; last.Name != "quic:connection_state_updated" && last.Name != "transport:packet_sent" {
		t.Fatalf("the trace ends with %s, want the closed state or our CONNECTION_CLOSE", last.Name)
	}
}

// TestQlogEndsBeforeCloseSeen: a connection's qlog is complete, its writer
// closed, by the time the application can see the connection's close, so
// that a program may exit then (the interop runner's client does): whoever
// closed, whether the application waits on Context or calls CloseWithError.
// The draining or closing period that follows is not recorded.
func TestQlogEndsBeforeCloseSeen(t *testing.T) {
	// pair connects a client recording into a new writer to an echo server
	// and returns both ends with the writer.
	pair := func(t *testing.T, s *sim, conf *Config) (c, sc *Conn, w *memQlog) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		w = newMemQlog()
		conf.Qlog = func(Perspective, []byte) io.WriteCloser { return slowCloseQlog{w} }
		c = s.dial(simClientAddr(1), srv.addr, conf)
		echoOurs(t, ctx, c, 1)
		return c, srv.next(t, ctx), w
	}
	t.Run("peer closes, Context", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			c, sc, w := pair(t, s, &Config{})
			_ = sc.CloseWithError(42, "bye")
			<-c.Context().Done()
			checkQlogEnded(t, w, "remote")
			var ae *ApplicationError
			if err := context.Cause(c.Context()); !errors.As(err, &ae) || ae.ErrorCode != 42 || !ae.Remote {
				t.Fatalf("the client's context ended with %v", err)
			}
		})
	})
	t.Run("peer closes, CloseWithError", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			c, sc, w := pair(t, s, &Config{})
			// A stream read fails as soon as the close is decided; the
			// application answers with CloseWithError, which has
			// nothing to send but returns only once the trace ended.
			st, err := c.OpenStreamSync(s.ctx())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			_ = sc.CloseWithError(42, "bye")
			if _, err := st.Read(make([]byte, 1)); err == nil {
				t.Fatal("a read of the closed connection succeeded")
			}
			_ = c.CloseWithError(0, "")
			checkQlogEnded(t, w, "remote")
		})
	})
	t.Run("local close, CloseWithError", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			c, _, w := pair(t, s, &Config{})
			_ = c.CloseWithError(7, "done")
			checkQlogEnded(t, w, "local")
			_, events := parseQlog(t, w.bytes())
			if n := summarize(events).frames["transport:packet_sent"]["connection_close"]; n != 1 {
				t.Fatalf("%d packets sent with CONNECTION_CLOSE recorded, want 1", n)
			}
		})
	})
	t.Run("idle timeout, Context", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			c, _, w := pair(t, s, &Config{MaxIdleTimeout: time.Second})
			<-c.Context().Done()
			checkQlogEnded(t, w, "local")
			var ie *IdleTimeoutError
			if err := context.Cause(c.Context()); !errors.As(err, &ie) {
				t.Fatalf("the client's context ended with %v", err)
			}
		})
	})
}

// strictTrace is a Config.Tracer trace whose recorder fails the test when
// it gets an event, or a Close, after its Close.
type strictTrace struct {
	t      *testing.T
	mu     sync.Mutex
	events int
	closed bool
}

func (tr *strictTrace) AddProducer() qlogwriter.Recorder { return tr }

func (tr *strictTrace) RecordEvent(ev qlogwriter.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closed {
		tr.t.Errorf("%s recorded after the recorder was closed", ev.Name())
	}
	tr.events++
}

func (tr *strictTrace) Close() error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closed {
		tr.t.Error("the recorder was closed twice")
	}
	tr.closed = true
	return nil
}

func (tr *strictTrace) state() (events int, closed bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.events, tr.closed
}

// TestQlogNothingAfterClose: a closing connection that receives packets
// and sends its CONNECTION_CLOSE again records none of it: its recorder
// was closed when CloseWithError returned and gets nothing more.
func TestQlogNothingAfterClose(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		tr := &strictTrace{t: t}
		srv := s.server(nil, &Config{Tracer: func(context.Context, bool, ConnectionID) qlogwriter.Trace { return tr }})
		c := s.dial(simClientAddr(1), srv.addr, &Config{})
		echoOurs(t, ctx, c, 1)
		sc := srv.next(t, ctx)
		// The client does not hear the close and goes on sending.
		s.tap(func(p *simnet.Packet) bool { return p.From != simServerAddr })
		_ = sc.CloseWithError(1, "bye")
		n, closed := tr.state()
		if !closed {
			t.Fatal("the recorder is open after CloseWithError returned")
		}
		for range 8 {
			st, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Write([]byte("late")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		<-sc.runDone // the closing period is over
		if m, _ := tr.state(); m != n {
			t.Fatalf("%d events recorded after the close", m-n)
		}
	})
}
