package quic

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// sparseAttackConfig lets one stream take issue 23's 49 frames 16 KiB
// apart, and a connection several such streams.
func sparseAttackConfig() *Config {
	return &Config{InitialStreamReceiveWindow: 1 << 20, InitialConnectionReceiveWindow: 8 << 20, MaxIdleTimeout: time.Minute}
}

// openAttackStreams opens n unidirectional streams on c, which send
// nothing by themselves, and returns their IDs for raw frames.
func openAttackStreams(t *testing.T, c *Conn, n int) []uint64 {
	t.Helper()
	ids := make([]uint64, n)
	for i := range ids {
		s, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = uint64(s.StreamID())
	}
	return ids
}

// settle lets the frames sent reach the server and be processed.
func settle() {
	time.Sleep(100 * time.Millisecond)
	synctest.Wait()
}

// recvMemOf returns what server connection c's receive buffers hold.
func recvMemOf(c *Conn) (held, outOfOrder int64, fragments int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recvMem.held, c.recvMem.outOfOrder, c.recvMem.fragments
}

// wantClosedBy waits for the server to close our client c and checks the
// error code it sent.
func wantClosedBy(t *testing.T, c *Conn, code TransportErrorCode) {
	t.Helper()
	select {
	case <-c.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not close the connection")
	}
	var te *TransportError
	if err := context.Cause(c.Context()); !errors.As(err, &te) || !te.Remote || te.ErrorCode != code {
		t.Fatalf("closed with %v, want the server's %s", err, code)
	}
}

// TestSparseStreamAttackBounded: attackers scatter one-byte frames over
// their streams' windows, offset 0 never sent. The server holds about what
// they sent (it held a 16 KiB chunk per frame), Transport.Stats reports it,
// a reset gives it all back, and a benign client is served meanwhile.
func TestSparseStreamAttackBounded(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, sparseAttackConfig())
		const attackers, streams = 4, 4
		clients := make([]*Conn, attackers)
		ids := make([][]uint64, attackers)
		for i := range clients {
			clients[i] = s.dial(simClientAddr(i+1), srv.addr, &Config{MaxIdleTimeout: time.Minute})
			ids[i] = openAttackStreams(t, clients[i], streams)
			for _, id := range ids[i] {
				sendRawFrames(t, clients[i], sparseStreamFrames(id, sparseFrames, 1, sparseGap))
			}
		}
		settle()
		srv.mu.Lock()
		served := srv.conns
		srv.mu.Unlock()
		if len(served) != attackers {
			t.Fatalf("%d connections served, want %d", len(served), attackers)
		}
		var total int64
		for _, c := range served {
			held, ooo, frags := recvMemOf(c)
			t.Logf("a connection with %d streams of %d one-byte frames holds %d bytes (%d out of order)", streams, sparseFrames, held, ooo)
			if frags != streams*sparseFrames || held > streams*4<<10 || ooo == 0 || ooo > held {
				t.Errorf("a connection holds %d bytes, %d out of order, in %d fragments; want at most %d bytes in %d fragments",
					held, ooo, frags, streams*4<<10, streams*sparseFrames)
			}
			total += held
		}
		st := srv.tr.Stats()
		if st.ReceiveBuffered != total || st.ReceiveOutOfOrder <= 0 || st.ReceiveOutOfOrder > total {
			t.Errorf("Stats: ReceiveBuffered %d, ReceiveOutOfOrder %d; the connections hold %d", st.ReceiveBuffered, st.ReceiveOutOfOrder, total)
		}

		for i, c := range clients {
			var resets [][]byte
			for _, id := range ids[i] {
				resets = append(resets, wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeResetStream, StreamID: id, FinalSize: sparseFrames*sparseGap + 1}))
			}
			sendRawFrames(t, c, resets)
		}
		settle()
		for _, c := range served {
			if held, ooo, frags := recvMemOf(c); held != 0 || ooo != 0 || frags != 0 {
				t.Errorf("after the resets a connection holds %d bytes, %d out of order, %d fragments", held, ooo, frags)
			}
			if err := context.Cause(c.Context()); err != nil {
				t.Errorf("a connection closed: %v", err)
			}
		}
		if st := srv.tr.Stats(); st.ReceiveBuffered != 0 || st.ReceiveOutOfOrder != 0 || len(st.ClosedByLimit) != 0 {
			t.Errorf("after the resets: ReceiveBuffered %d, ReceiveOutOfOrder %d, ClosedByLimit %v", st.ReceiveBuffered, st.ReceiveOutOfOrder, st.ClosedByLimit)
		}

		benign := s.dial(simClientAddr(100), srv.addr, nil)
		echoOurs(t, s.ctx(), benign, 1<<20)
		settle()
		if st := srv.tr.Stats(); st.ReceiveBuffered != 0 {
			t.Errorf("after the benign transfer the server holds %d bytes of received data", st.ReceiveBuffered)
		}
	})
}

// TestReceiveMemoryLimitsClose: a connection past a per-connection limit
// on out-of-order data is closed with PROTOCOL_VIOLATION; past the
// Transport's MaxReceiveMemory the one holding the most out-of-order data
// is closed with INTERNAL_ERROR, not the one holding data in order that
// tipped the total over; each frees its buffers at once and is counted
// by reason, and a benign client is still served.
func TestReceiveMemoryLimitsClose(t *testing.T) {
	t.Run("too many gaps", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			conf := sparseAttackConfig()
			conf.MaxReceiveFragments = 100
			srv := s.server(nil, conf)
			c := s.dial(simClientAddr(1), srv.addr, nil)
			for _, id := range openAttackStreams(t, c, 3) {
				sendRawFrames(t, c, sparseStreamFrames(id, sparseFrames, 1, sparseGap))
			}
			wantClosedBy(t, c, ProtocolViolation)
			synctest.Wait()
			st := srv.tr.Stats()
			if st.ClosedByLimit["too_many_gaps"] != 1 || st.ReceiveBuffered != 0 {
				t.Errorf("ClosedByLimit %v, ReceiveBuffered %d; want too_many_gaps 1, nothing held", st.ClosedByLimit, st.ReceiveBuffered)
			}
			echoOurs(t, s.ctx(), s.dial(simClientAddr(2), srv.addr, nil), 100<<10)
		})
	})
	t.Run("out-of-order budget", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			conf := sparseAttackConfig()
			conf.MaxOutOfOrderReceiveBytes = 32 << 10
			srv := s.server(nil, conf)
			c := s.dial(simClientAddr(1), srv.addr, nil)
			id := openAttackStreams(t, c, 1)[0]
			sendRawFrames(t, c, sparseStreamFrames(id, sparseFrames, 1000, sparseGap))
			wantClosedBy(t, c, ProtocolViolation)
			synctest.Wait()
			st := srv.tr.Stats()
			if st.ClosedByLimit["out_of_order_budget"] != 1 || st.ReceiveBuffered != 0 {
				t.Errorf("ClosedByLimit %v, ReceiveBuffered %d; want out_of_order_budget 1, nothing held", st.ClosedByLimit, st.ReceiveBuffered)
			}
			echoOurs(t, s.ctx(), s.dial(simClientAddr(2), srv.addr, nil), 100<<10)
		})
	})
	t.Run("transport hard limit", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			tr := &Transport{MaxReceiveBuffer: 64 << 10, MaxReceiveMemory: 128 << 10}
			srv := s.server(tr, sparseAttackConfig())
			// The offender: about 100 KiB of 1000-byte frames out of order.
			offender := s.dial(simClientAddr(1), srv.addr, nil)
			for _, id := range openAttackStreams(t, offender, 2) {
				sendRawFrames(t, offender, sparseStreamFrames(id, sparseFrames, 1000, sparseGap))
			}
			// A few one-byte frames out of order.
			small := s.dial(simClientAddr(2), srv.addr, nil)
			sendRawFrames(t, small, sparseStreamFrames(openAttackStreams(t, small, 1)[0], 10, 1, sparseGap))
			settle()
			if st := tr.Stats(); st.ReceiveBuffered > 128<<10 || len(st.ClosedByLimit) != 0 {
				t.Fatalf("before the limit: ReceiveBuffered %d, ClosedByLimit %v", st.ReceiveBuffered, st.ClosedByLimit)
			}
			// 40 KiB in order, never read, tips the total over the limit.
			inOrder := s.dial(simClientAddr(3), srv.addr, nil)
			id := openAttackStreams(t, inOrder, 1)[0]
			var frames [][]byte
			for off := 0; off < 40<<10; off += 1000 {
				frames = append(frames, wire.AppendStreamFrame(nil, id, uint64(off), make([]byte, 1000), false, true))
			}
			sendRawFrames(t, inOrder, frames)
			wantClosedBy(t, offender, InternalError)
			synctest.Wait()
			for _, c := range []*Conn{small, inOrder} {
				if err := context.Cause(c.Context()); err != nil {
					t.Fatalf("a connection that was not the worst offender closed: %v", err)
				}
			}
			st := tr.Stats()
			if st.ClosedByLimit["receive_memory"] != 1 || st.ReceiveBuffered > 64<<10 {
				t.Errorf("ClosedByLimit %v, ReceiveBuffered %d; want receive_memory 1, the offender's memory freed", st.ClosedByLimit, st.ReceiveBuffered)
			}
			echoOurs(t, s.ctx(), s.dial(simClientAddr(4), srv.addr, nil), 256<<10)
		})
	})
}
