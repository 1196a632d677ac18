package quic

import (
	"testing"
	"testing/synctest"

	"github.com/turboretry/turboretry/internal/wire"
)

// drainWriteTest starts a Write of size bytes on a new stream of a
// harness connection whose peer gives it all the flow-control credit it
// needs, so that the congestion window alone holds the data back and the
// Write waits in drainLocked. It returns the stream's internals, a
// channel closed when the Write returned and the number of the first
// packet sent with the Write's data.
func drainWriteTest(t *testing.T, size int) (tc *testConn, s *stream, done chan struct{}, firstPN uint64) {
	tc = newTestConn(t, serverSide, func(c *Config, p *wire.TransportParameters) {
		p.InitialMaxData = 4 << 20
		p.InitialMaxStreamDataBidiRemote = 4 << 20
		p.InitialMaxStreamDataBidiLocal = 4 << 20
	})
	tc.ignored[wire.FrameTypeStream] = true
	before := len(tc.received[spaceApp])
	st := tc.openStream()
	done = make(chan struct{})
	go func() {
		defer close(done)
		mustWrite(t, st, size)
	}()
	tc.wait()
	tc.conn.mu.Lock()
	s = tc.conn.streams.all[uint64(st.StreamID())]
	waiting, unsent := s.drainWaiting, s.send.Unsent()
	tc.conn.mu.Unlock()
	if !waiting || unsent <= writeDrain {
		t.Fatalf("the Write does not wait in drainLocked (waiting %v, %d bytes unsent)", waiting, unsent)
	}
	tc.collect()
	if len(tc.received[spaceApp]) == before {
		t.Fatal("nothing sent")
	}
	return tc, s, done, tc.received[spaceApp][before]
}

// An acknowledgement does not wake a Write waiting for its data to be
// packed: the data still unsent is the same, and the writer would only
// take mu and wait again, once per ACK the connection handles.
func TestDrainingWriteNotWokenByAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc, s, done, first := drainWriteTest(t, 512<<10)
		tc.conn.mu.Lock()
		before := s.writeSig
		tc.conn.mu.Unlock()
		// Acknowledge the first packet only: the window grows a little,
		// far from the writeDrain bytes that would end the Write.
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeAck, AckRanges: ackRangesOf([]uint64{first})})
		tc.wait()
		tc.conn.mu.Lock()
		after, waiting, unsent := s.writeSig, s.drainWaiting, s.send.Unsent()
		tc.conn.mu.Unlock()
		if !waiting || unsent <= writeDrain {
			t.Fatalf("after the ACK: waiting %v, %d bytes unsent; want still waiting", waiting, unsent)
		}
		if after != before {
			t.Error("the ACK woke the draining writer (its wait channel was closed and made anew)")
		}
		select {
		case <-before:
			t.Error("the draining writer's wait channel was closed by the ACK")
		default:
		}
		// Acknowledging everything as it comes lets the Write finish.
		for range 200 {
			select {
			case <-done:
				return
			default:
			}
			tc.advance(testRTT)
			tc.writeAck(spaceApp)
		}
		t.Fatal("the Write did not return")
	})
}

// The run that packs a draining Write's data down to writeDrain bytes
// wakes the writer only after it released mu (run closes the channel
// wakeDrained took), so that the writer does not wake to block on mu while
// the rest of the run's packets are built.
func TestDrainingWriteWokenAfterUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc, s, done, _ := drainWriteTest(t, 64<<10)
		c := tc.conn
		// Pack the rest of the stream's data by hand, under mu, as
		// sendLocked would in a run with the window open.
		c.mu.Lock()
		sig := s.writeSig
		b := make([]byte, 0, 1500)
		var p sentPacket
		for s.send.Unsent() > writeDrain {
			b, _ = s.appendStreamFrame(b[:0], 1400, &p)
		}
		closedUnderMu := isClosed(sig)
		taken := c.send.takeDrained()
		c.mu.Unlock()
		if closedUnderMu {
			t.Error("the writer's wait channel was closed while mu was held")
		}
		if len(taken) != 1 || taken[0] != sig {
			t.Fatalf("%d channels taken for waking after the run, want the writer's one", len(taken))
		}
		c.send.wakeWriters(taken)
		tc.wait()
		select {
		case <-done:
		default:
			t.Fatal("the Write did not return after the run")
		}
	})
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
