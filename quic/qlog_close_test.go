package quic

import (
	"context"
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

// TestQlogLocalCloseEndsTrace: when CloseWithError returns, the
// connection's qlog writer is closed and its trace ends with the closed
// state or our one CONNECTION_CLOSE: no metrics_updated after
// connection_closed (sending the close recorded one when the figures had
// changed since the last: 17 of 100 -race runs).
func TestQlogLocalCloseEndsTrace(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		w := newMemQlog()
		c := s.dial(simClientAddr(1), srv.addr, &Config{Qlog: func(Perspective, []byte) io.WriteCloser { return slowCloseQlog{w} }})
		echoOurs(t, ctx, c, 1)
		_ = c.CloseWithError(7, "done")
		checkQlogEnded(t, w, "local")
		_, events := parseQlog(t, w.bytes())
		if n := summarize(events).frames["transport:packet_sent"]["connection_close"]; n != 1 {
			t.Fatalf("%d packets sent with CONNECTION_CLOSE recorded, want 1", n)
		}
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

// TestQlogPeerCloseEndsTrace: a connection the peer closed first has its
// trace ended when CloseWithError returns, called once the application
// saw the close (Context), as a program that exits then does.
func TestQlogPeerCloseEndsTrace(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		w := newMemQlog()
		c := s.dial(simClientAddr(1), srv.addr, &Config{Qlog: func(Perspective, []byte) io.WriteCloser { return slowCloseQlog{w} }})
		echoOurs(t, ctx, c, 1)
		sc := srv.next(t, ctx)
		_ = sc.CloseWithError(7, "bye")
		<-c.Context().Done()
		_ = c.CloseWithError(0, "")
		checkQlogEnded(t, w, "remote")
	})
}
