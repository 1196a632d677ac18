package quic

import (
	"errors"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of closing (RFC 9000 section 10): CONNECTION_CLOSE
// in both directions, the closing and draining periods, the idle timeout
// and stateless resets, in virtual time.

// finished reports whether the connection's goroutine ended.
func (tc *testConn) finished() bool {
	tc.wait()
	select {
	case <-tc.conn.runDone:
		return true
	default:
		return false
	}
}

// pto returns the connection's current probe timeout.
func (tc *testConn) pto() time.Duration {
	tc.conn.mu.Lock()
	defer tc.conn.mu.Unlock()
	return tc.conn.loss.pto()
}

// TestCloseApplicationError: CloseWithError sends CONNECTION_CLOSE of the
// application type with the code and reason (RFC 9000 sections 10.2 and
// 19.19).
func TestCloseApplicationError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.conn.CloseWithError(0x42, "bye")
		tc.wantFrame("CloseWithError", wire.Frame{Type: wire.FrameTypeConnectionCloseApp, ErrorCode: 0x42, Reason: []byte("bye")})
		var ae *ApplicationError
		if err := tc.closeErr(); !errors.As(err, &ae) || ae.Remote || ae.ErrorCode != 0x42 {
			t.Fatalf("close error %v, want our application error 0x42", err)
		}
	})
}

// TestCloseTransportErrorNamesFrame: a transport CONNECTION_CLOSE names
// the type of the frame that caused it (RFC 9000 section 19.19).
func TestCloseTransportErrorNamesFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeHandshakeDone})
		f := tc.findFrame("HANDSHAKE_DONE from the client", wire.FrameTypeConnectionClose)
		if f.TriggerFrameType != uint64(wire.FrameTypeHandshakeDone) {
			t.Fatalf("CONNECTION_CLOSE names frame type %#x, want HANDSHAKE_DONE", f.TriggerFrameType)
		}
	})
}

// TestCloseClosingAnswersWithClose: in the closing state, packets from
// the peer are answered with CONNECTION_CLOSE, less and less often (RFC
// 9000 section 10.2.1).
func TestCloseClosingAnswersWithClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.conn.CloseWithError(1, "")
		tc.wantFrameType("CloseWithError", wire.FrameTypeConnectionCloseApp)
		var answers []int
		for i := 1; i <= 8; i++ {
			tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
			for _, f := range tc.readFrames() {
				if f.Type != wire.FrameTypeConnectionCloseApp {
					t.Fatalf("closing: sent %s", describeFrame(&f.Frame))
				}
				answers = append(answers, i)
			}
		}
		if want := []int{1, 2, 4, 8}; !slices.Equal(answers, want) {
			t.Fatalf("CONNECTION_CLOSE repeated after packets %v, want %v", answers, want)
		}
	})
}

// TestCloseClosingPeriodLasts3PTO: the closing state lasts three PTOs,
// then the connection is gone (RFC 9000 section 10.2).
func TestCloseClosingPeriodLasts3PTO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		pto := tc.pto()
		tc.conn.CloseWithError(1, "")
		tc.advance(3*pto - time.Millisecond)
		if tc.finished() {
			t.Fatal("the connection ended before three PTOs")
		}
		tc.advance(time.Millisecond)
		if !tc.finished() {
			t.Fatal("the connection still runs after three PTOs")
		}
	})
}

// TestClosePeerApplicationClose: the peer's CONNECTION_CLOSE of the
// application type closes the connection with its code and reason (RFC
// 9000 sections 10.2.2 and 19.19).
func TestClosePeerApplicationClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeConnectionCloseApp, ErrorCode: 7, Reason: []byte("done")})
		var ae *ApplicationError
		if err := tc.closeErr(); !errors.As(err, &ae) || !ae.Remote || ae.ErrorCode != 7 || ae.ErrorMessage != "done" {
			t.Fatalf("close error %v, want the peer's application error 7 \"done\"", err)
		}
	})
}

// TestClosePeerTransportClose: the peer's transport CONNECTION_CLOSE
// closes the connection with its code and frame type (RFC 9000 section
// 19.19).
func TestClosePeerTransportClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeConnectionClose, ErrorCode: uint64(FlowControlError), TriggerFrameType: 0x08})
		var te *TransportError
		if err := tc.closeErr(); !errors.As(err, &te) || !te.Remote || te.ErrorCode != FlowControlError || te.FrameType != 0x08 {
			t.Fatalf("close error %v, want the peer's FLOW_CONTROL_ERROR on STREAM", err)
		}
	})
}

// TestCloseDrainingSendsNothing: once the peer closed, the connection is
// draining and sends no packets, whatever arrives (RFC 9000 section
// 10.2.2).
func TestCloseDrainingSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeConnectionCloseApp, ErrorCode: 7})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.advance(time.Second)
		tc.wantNoFrame("draining")
	})
}

// TestCloseDrainingPeriodLasts3PTO: the draining state lasts three PTOs
// (RFC 9000 section 10.2).
func TestCloseDrainingPeriodLasts3PTO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		pto := tc.pto()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeConnectionCloseApp, ErrorCode: 7})
		tc.advance(3*pto - time.Millisecond)
		if tc.finished() {
			t.Fatal("the connection ended before three PTOs")
		}
		tc.advance(time.Millisecond)
		if !tc.finished() {
			t.Fatal("the connection still runs after three PTOs")
		}
	})
}

// TestCloseIdleTimeout: after max_idle_timeout without packets the
// connection closes silently (RFC 9000 section 10.1).
func TestCloseIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
		})
		tc.advance(10*time.Second - time.Millisecond)
		tc.wantOpen("just before the idle timeout")
		tc.advance(time.Millisecond)
		var ite *IdleTimeoutError
		if err := tc.closeErr(); !errors.As(err, &ite) {
			t.Fatalf("close error %v, want an idle timeout", err)
		}
		tc.wantNoFrame("an idle timeout is silent")
	})
}

// TestCloseIdleTimeoutPeerSmaller: the idle timeout is the smaller of
// the two announced (RFC 9000 section 10.1).
func TestCloseIdleTimeoutPeerSmaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, p *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
			p.MaxIdleTimeout = 4 * time.Second
		})
		tc.advance(4*time.Second - time.Millisecond)
		tc.wantOpen("just before the peer's idle timeout")
		tc.advance(time.Millisecond)
		if tc.closeErr() == nil {
			t.Fatal("open after the peer's idle timeout")
		}
	})
}

// TestCloseIdleTimeoutAtLeast3PTO: the idle timeout is never shorter
// than three PTOs (RFC 9000 section 10.1).
func TestCloseIdleTimeoutAtLeast3PTO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = time.Millisecond
		})
		pto := tc.pto()
		tc.advance(3*pto - time.Millisecond)
		tc.wantOpen("before three PTOs")
		tc.advance(time.Millisecond)
		if tc.closeErr() == nil {
			t.Fatal("open after three PTOs")
		}
	})
}

// TestCloseIdleRestartedByPacket: a packet from the peer restarts the
// idle timer (RFC 9000 section 10.1).
func TestCloseIdleRestartedByPacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
		})
		tc.advance(8 * time.Second)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.advance(9 * time.Second)
		tc.wantOpen("9s after the last packet")
		tc.advance(time.Second)
		if tc.closeErr() == nil {
			t.Fatal("open 10s after the last packet")
		}
	})
}

// TestCloseKeepAlivePings: with a keep-alive period, an idle connection
// sends PING to stay open (RFC 9000 section 10.1.2).
func TestCloseKeepAlivePings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
			c.KeepAlivePeriod = 2 * time.Second
		})
		tc.advance(2*time.Second - time.Millisecond)
		tc.wantNoFrame("before the keep-alive period")
		tc.advance(time.Millisecond)
		tc.wantFrame("keep-alive", wire.Frame{Type: wire.FrameTypePing})
	})
}

// TestCloseStatelessReset: a datagram ending with the peer's stateless
// reset token closes the connection without a reply (RFC 9000 section
// 10.3).
func TestCloseStatelessReset(t *testing.T) {
	token := [16]byte{0x70, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, clientSide, func(_ *Config, p *wire.TransportParameters) {
			p.StatelessResetToken = token
			p.HasStatelessResetToken = true
		})
		reset := append([]byte{0x40, 0x55, 0x66, 0x77, 0x88, 0x99}, token[:]...)
		tc.writeDatagram(reset)
		var sre *StatelessResetError
		if err := tc.closeErr(); !errors.As(err, &sre) {
			t.Fatalf("close error %v, want a stateless reset", err)
		}
		tc.wantNoFrame("after a stateless reset")
	})
}

// TestCloseBeforeHandshakeHidesApplicationError: an application close
// before the handshake completes goes in an Initial packet as a transport
// CONNECTION_CLOSE with APPLICATION_ERROR and no reason (RFC 9000 section
// 10.2.3).
func TestCloseBeforeHandshakeHidesApplicationError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.findFrame("the ClientHello", wire.FrameTypeCrypto)
		tc.conn.CloseWithError(5, "secret reason")
		f := tc.findFrame("CloseWithError during the handshake", wire.FrameTypeConnectionClose)
		if f.space != spaceInitial || TransportErrorCode(f.ErrorCode) != ApplicationErrorErrorCode || len(f.Reason) != 0 {
			t.Fatalf("space %d: %s; want an Initial CONNECTION_CLOSE with APPLICATION_ERROR and no reason", f.space, describeFrame(&f.Frame))
		}
	})
}

// TestCloseIdleRestartedBySending: the first ack-eliciting packet sent
// after a receipt restarts the idle timer too (RFC 9000 section 10.1).
func TestCloseIdleRestartedBySending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
		})
		tc.advance(8 * time.Second)
		mustWrite(t, tc.openUniStream(), 10)
		tc.advance(10*time.Second - time.Millisecond)
		tc.wantOpen("10s after the last receipt, but not after our data")
		tc.advance(time.Millisecond)
		if tc.closeErr() == nil {
			t.Fatal("open 10s after our first ack-eliciting packet")
		}
	})
}

// TestClosePeerCloseEndsStreams: when the peer closes, reads fail with
// its error (RFC 9000 section 10.2: the connection's streams end with
// it).
func TestClosePeerCloseEndsStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "x", false))
		st := tc.acceptStream()
		readNow(t, st, 10)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeConnectionCloseApp, ErrorCode: 7})
		var ae *ApplicationError
		if _, err := readNow(t, st, 10); !errors.As(err, &ae) || ae.ErrorCode != 7 {
			t.Fatalf("read after the peer's close: %v, want its application error 7", err)
		}
	})
}

// TestIdleTimeoutCountsQueuedDatagram: a datagram that reached the
// connection's inbox before the idle deadline keeps it open, even when the
// connection's goroutine (restarted from parking, or late under load)
// runs only after the deadline passed: queued datagrams are handled before
// the timers.
func TestIdleTimeoutCountsQueuedDatagram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.MaxIdleTimeout = 10 * time.Second
		})
		tc.acceptFrames(wire.FrameTypeAck)
		tc.advance(10*time.Second - time.Millisecond)
		tc.wantOpen("just before the idle timeout")
		// Queued as the Transport queues it, but with no wake: the
		// goroutine (parked by now) first runs at the deadline.
		buf := getBuffer()
		d := tc.sealPacket((*buf)[:0], spaceApp, tc.nextPN[spaceApp], []byte{byte(wire.FrameTypePing)})
		tc.nextPN[spaceApp]++
		if queued, _ := tc.conn.inbox.push(receivedPacket{buf: buf, data: d, remote: tc.peer, addrPort: tc.peer.(*net.UDPAddr).AddrPort(), rcvTime: time.Now()}); !queued {
			t.Fatal("the inbox refused the datagram")
		}
		tc.advance(time.Millisecond)
		tc.wantOpen("a PING queued before the idle deadline")
		tc.advance(30 * time.Millisecond) // max_ack_delay
		tc.wantFrameType("the queued PING is acknowledged", wire.FrameTypeAck)
		tc.advance(10*time.Second - 40*time.Millisecond)
		tc.wantOpen("the idle timeout counts from the PING")
	})
}
