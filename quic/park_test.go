package quic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// runningLoop reports whether c's event loop has a goroutine in the
// calling synctest bubble, once the bubble settled.
func runningLoop(c *Conn) bool {
	synctest.Wait()
	frame := fmt.Sprintf("quic.(*Conn).run(%p", c)
	return strings.Contains(strings.Join(bubbleGoroutines(frame), "\n"), frame)
}

// TestIdleConnParks: an idle connection holds no goroutine: both ends'
// event loops exit parkAfter after the last work, a datagram starts the
// server's again (quic-go's client and ours send one), the idle timeout
// still fires at its time on a parked connection, and closing the
// Transport ends a parked one.
func TestIdleConnParks(t *testing.T) {
	const idle = 5 * time.Second
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, &Config{MaxIdleTimeout: idle})
		c := s.dial(simClientAddr(1), srv.addr, &Config{MaxIdleTimeout: idle})
		echoOurs(t, ctx, c, 1000)
		sc := srv.only(t)
		time.Sleep(time.Second) // the last ACKs and MTU probes are over
		if runningLoop(sc) || runningLoop(c) {
			t.Fatalf("after a second idle: server's loop running %v, client's %v; want both parked", runningLoop(sc), runningLoop(c))
		}

		// A request wakes both (ours by the API call, the server's by
		// the datagram); they park again.
		echoOurs(t, ctx, c, 1000)
		time.Sleep(time.Second)
		if runningLoop(sc) || runningLoop(c) {
			t.Fatal("the loops did not park again after the second request")
		}

		// quic-go's client: its request starts the parked server loop.
		_, qc := s.dialQuicGo(simClientAddr(2), srv.addr)
		echoOver(t, ctx, qc, 1000)
		time.Sleep(time.Second)
		echoOver(t, ctx, qc, 1000)

		// The idle timeout fires on the parked timer, at its time.
		lastIn := s.lastArrivalAt(simClientAddr(1), simLink.Delay)
		echoOurs(t, ctx, c, 10)
		_, err := c.AcceptStream(ctx)
		checkIdleTimeout(t, c, err, lastIn(), idle)

		// Closing the server's Transport ends its parked connection to
		// quic-go's client.
		time.Sleep(time.Second)
		var qsc *Conn
		for len(srv.accepted) > 0 {
			qsc = <-srv.accepted
		}
		if qsc == nil || qsc == sc || runningLoop(qsc) {
			t.Fatalf("quic-go's connection on the server: %v, loop running; want a parked one", qsc)
		}
		srv.tr.Close()
		select {
		case <-qsc.runDone:
		case <-ctx.Done():
			t.Fatal("a parked connection outlived its Transport")
		}
	})
}

// TestParkWakeRaces: requests that arrive around the moment the loops
// park, at the same virtual instant included (the datagram and the park
// timer race for real then), are all answered: no wake is lost, and the
// loops end with their Transports.
func TestParkWakeRaces(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, &Config{MaxIdleTimeout: time.Minute})
		c := s.dial(simClientAddr(1), srv.addr, &Config{MaxIdleTimeout: time.Minute})
		echoOurs(t, ctx, c, 100)
		// The loops park parkAfter after their last work (the server's:
		// the client's delayed ACK, up to 25 ms and a one-way delay after
		// the echo returned): step the next request across those moments.
		for gap := parkAfter - 10*time.Millisecond; gap <= parkAfter+60*time.Millisecond; gap += time.Millisecond / 2 {
			time.Sleep(gap)
			echoOurs(t, ctx, c, 100)
		}
		time.Sleep(time.Second)
		if runningLoop(srv.only(t)) || runningLoop(c) {
			t.Fatal("a loop did not park after the last request")
		}
	})
}

// TestParkReleasesScratch: after a transfer, a parked connection holds
// none of the per-packet records and queue slices kept for reuse while it
// was busy.
func TestParkReleasesScratch(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 1<<20)
		sc := srv.only(t)
		time.Sleep(time.Second)
		for _, conn := range []*Conn{sc, c} {
			if runningLoop(conn) {
				t.Fatal("a loop did not park")
			}
			conn.mu.Lock()
			free, frame := len(conn.loss.freeSent), conn.frame != nil
			events := cap(conn.loss.events.Acked) + cap(conn.loss.events.Lost)
			conn.mu.Unlock()
			if free != 0 || frame || events != 0 {
				t.Errorf("parked, the connection keeps %d sent-packet records for reuse, frame scratch %v, room for %d acknowledged or lost packets", free, frame, events)
			}
		}
		echoOurs(t, ctx, c, 1<<10)
	})
}

// TestParkedConnHoldsNoFinishedStream: a stream both of whose sides are
// done is forgotten by the connection, and no stream list's array keeps
// a pointer to it (a vacated slot left behind by removal from the send
// list kept a finished request stream alive, 640 bytes and more, for as
// long as an idle connection lived); a parked connection's empty lists
// hold no arrays. The server's connection holds no tls.Config either (a
// clone per connection when the config has GetCertificate).
func TestParkedConnHoldsNoFinishedStream(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 3000)
		echoOurs(t, ctx, c, 10)
		sc := srv.only(t)
		time.Sleep(time.Second)
		if sc.tlsConf != nil {
			t.Error("the server connection keeps its tls.Config after the handshake")
		}
		for _, conn := range []*Conn{sc, c} {
			if runningLoop(conn) {
				t.Fatal("a loop did not park")
			}
			conn.mu.Lock()
			ss := &conn.streams
			open := len(ss.all)
			var stale []uint64
			for _, list := range [][]*stream{ss.sendList, ss.ctrlList, ss.prioOrder, ss.acceptBidi, ss.acceptUni} {
				if cap(list) > 0 {
					t.Errorf("a parked connection keeps an empty stream list of capacity %d", cap(list))
				}
				for _, st := range list[:cap(list)] {
					if st != nil && ss.all[st.id] != st {
						stale = append(stale, st.id)
					}
				}
			}
			conn.mu.Unlock()
			if open != 0 || len(stale) != 0 {
				t.Errorf("parked: %d streams open, finished streams %v still referenced", open, stale)
			}
		}
		echoOurs(t, ctx, c, 1<<10)
	})
}

// TestStreamContextMadeOnDemand: a stream's context is made by the first
// Context call, not with the stream (most streams, an HTTP/3 connection's
// control streams among them, are never asked for it), and behaves as
// before: canceled with the first cause once the send side ends, also
// when it is made after that.
func TestStreamContextMadeOnDemand(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		asked, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		live := asked.Context()
		late, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := late.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		made := late.s.sendCtx != nil
		c.mu.Unlock()
		if made {
			t.Fatal("a stream's context was made before anyone asked for it")
		}
		if live.Err() != nil {
			t.Fatalf("an open stream's context: %v", live.Err())
		}
		late.Close()
		late.CancelWrite(3) // after Close: the first cause stays
		lateCtx := late.Context()
		if cause := context.Cause(lateCtx); !errors.Is(cause, ErrStreamClosed) {
			t.Fatalf("context made after Close: cause %v, want ErrStreamClosed", cause)
		}
		if asked.Context() != live {
			t.Fatal("a second Context call made another context")
		}
		asked.CancelWrite(5)
		<-live.Done()
		var se *StreamError
		if cause := context.Cause(live); !errors.As(cause, &se) || se.ErrorCode != 5 {
			t.Fatalf("cause after CancelWrite: %v", cause)
		}
		echoOurs(t, ctx, c, 10)
	})
}
