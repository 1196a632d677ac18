package quic

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of flow control (RFC 9000 section 4), on a server
// connection whose windows are 1000 bytes per stream and 5000 for the
// connection, with 10 incoming streams of each kind.

// TestFlowMaxStreamDataAsReaderConsumes: reading a stream's data moves
// its window: MAX_STREAM_DATA goes out with a higher limit (RFC 9000
// section 4.2).
func TestFlowMaxStreamDataAsReaderConsumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, strings.Repeat("a", 1000), false))
		tc.wantNoFrameOfType("data not read yet", wire.FrameTypeMaxStreamData)
		if got, _ := readNow(t, tc.acceptStream(), 1000); len(got) != 1000 {
			t.Fatalf("read %d bytes", len(got))
		}
		f := tc.findFrame("the window was read", wire.FrameTypeMaxStreamData)
		if f.StreamID != 0 || f.Limit <= 1000 {
			t.Fatalf("MAX_STREAM_DATA %d for stream %d, want above 1000 for stream 0", f.Limit, f.StreamID)
		}
	})
}

// TestFlowMaxDataAsReaderConsumes: reading moves the connection's window
// too: MAX_DATA goes out with a higher limit (RFC 9000 section 4.2).
func TestFlowMaxDataAsReaderConsumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		for id := uint64(0); id < 20; id += 4 {
			tc.writeFrames(spaceApp, streamFrame(id, 0, strings.Repeat("a", 1000), false))
		}
		tc.wantNoFrameOfType("data not read yet", wire.FrameTypeMaxData)
		for range 5 {
			readNow(t, tc.acceptStream(), 1000)
		}
		if f := tc.findFrame("the connection's window was read", wire.FrameTypeMaxData); f.Limit <= 5000 {
			t.Fatalf("MAX_DATA %d, want above 5000", f.Limit)
		}
	})
}

// TestFlowStreamLimitExceeded: data beyond a stream's limit is a
// FLOW_CONTROL_ERROR (RFC 9000 section 4.1).
func TestFlowStreamLimitExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, strings.Repeat("a", 1000), false))
		tc.wantOpen("exactly the stream window")
		tc.writeFrames(spaceApp, streamFrame(0, 1000, "b", false))
		tc.wantTransportClose("one byte over the stream window", FlowControlError)
	})
}

// TestFlowConnectionLimitExceeded: data beyond the connection's limit,
// each stream within its own, is a FLOW_CONTROL_ERROR (RFC 9000 section
// 4.1).
func TestFlowConnectionLimitExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		for id := uint64(0); id < 20; id += 4 {
			tc.writeFrames(spaceApp, streamFrame(id, 0, strings.Repeat("a", 1000), false))
		}
		tc.wantOpen("exactly the connection window")
		tc.writeFrames(spaceApp, streamFrame(20, 0, "b", false))
		tc.wantTransportClose("one byte over the connection window", FlowControlError)
	})
}

// TestFlowResendDoesNotCount: data received again counts once against
// the limits: flow control counts the highest offset (RFC 9000 section
// 4.1).
func TestFlowResendDoesNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		for range 3 {
			tc.writeFrames(spaceApp, streamFrame(0, 0, strings.Repeat("a", 1000), false))
		}
		tc.wantOpen("the same 1000 bytes three times")
	})
}

// TestFlowResetFinalSizeCounts: a RESET_STREAM's final size counts
// against the stream's limit (RFC 9000 section 4.5).
func TestFlowResetFinalSizeCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 1, FinalSize: 1001})
		tc.wantTransportClose("final size over the stream window", FlowControlError)
	})
}

// TestFlowStreamDataBlocked: a sender blocked by a stream's limit sends
// what fits and STREAM_DATA_BLOCKED at that limit (RFC 9000 sections 4.1
// and 19.13).
func TestFlowStreamDataBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamDataBidiRemote = 100
		})
		st := tc.openStream()
		mustWrite(t, st, 300)
		var sent uint64
		blocked := false
		for _, f := range tc.readFrames() {
			switch f.Type {
			case wire.FrameTypeStream:
				sent = max(sent, f.Offset+uint64(len(f.Data)))
			case wire.FrameTypeStreamDataBlocked:
				blocked = f.StreamID == 1 && f.Limit == 100
			}
		}
		if sent != 100 || !blocked {
			t.Fatalf("sent %d bytes, STREAM_DATA_BLOCKED at 100: %v; want 100 bytes and the frame", sent, blocked)
		}
	})
}

// TestFlowMaxStreamDataUnblocks: MAX_STREAM_DATA from the peer lets the
// blocked data go (RFC 9000 section 4.1).
func TestFlowMaxStreamDataUnblocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamDataBidiRemote = 100
		})
		st := tc.openStream()
		mustWrite(t, st, 300)
		tc.readFrames()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamData, StreamID: 1, Limit: 300})
		f := tc.findFrame("the limit went up", wire.FrameTypeStream)
		if f.Offset != 100 || len(f.Data) != 200 {
			t.Fatalf("STREAM at %d with %d bytes, want 200 at 100", f.Offset, len(f.Data))
		}
	})
}

// TestFlowMaxStreamDataNotDecreasing: a MAX_STREAM_DATA that does not
// raise the limit is ignored (RFC 9000 section 4.1).
func TestFlowMaxStreamDataNotDecreasing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamDataBidiRemote = 100
		})
		st := tc.openStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamData, StreamID: 1, Limit: 50})
		mustWrite(t, st, 300)
		var sent uint64
		for _, f := range tc.readFrames() {
			if f.Type == wire.FrameTypeStream {
				sent = max(sent, f.Offset+uint64(len(f.Data)))
			}
		}
		if sent != 100 {
			t.Fatalf("sent %d bytes, want 100 (a lower MAX_STREAM_DATA is ignored)", sent)
		}
	})
}

// TestFlowDataBlocked: a sender blocked by the connection's limit sends
// DATA_BLOCKED at that limit (RFC 9000 sections 4.1 and 19.12).
func TestFlowDataBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxData = 150
		})
		mustWrite(t, tc.openStream(), 100)
		mustWrite(t, tc.openStream(), 100)
		var sent uint64
		blocked := false
		for _, f := range tc.readFrames() {
			switch f.Type {
			case wire.FrameTypeStream:
				sent += uint64(len(f.Data))
			case wire.FrameTypeDataBlocked:
				blocked = f.Limit == 150
			}
		}
		if sent != 150 || !blocked {
			t.Fatalf("sent %d bytes, DATA_BLOCKED at 150: %v; want 150 bytes and the frame", sent, blocked)
		}
	})
}

// TestFlowMaxDataUnblocks: MAX_DATA from the peer lets the blocked data
// go (RFC 9000 section 4.1).
func TestFlowMaxDataUnblocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxData = 100
		})
		mustWrite(t, tc.openStream(), 300)
		tc.readFrames()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxData, Limit: 300})
		f := tc.findFrame("the limit went up", wire.FrameTypeStream)
		if f.Offset != 100 || len(f.Data) != 200 {
			t.Fatalf("STREAM at %d with %d bytes, want 200 at 100", f.Offset, len(f.Data))
		}
	})
}

// TestFlowStreamsBlocked: a peer's stream limit stops OpenStream, and
// STREAMS_BLOCKED tells it so (RFC 9000 sections 4.6 and 19.14).
func TestFlowStreamsBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamsBidi = 1
		})
		tc.openStream()
		if _, err := tc.conn.OpenStream(); err == nil {
			t.Fatal("a second stream opened over the peer's limit of 1")
		}
		if f := tc.findFrame("stream limit reached", wire.FrameTypeStreamsBlockedBidi); f.Limit != 1 {
			t.Fatalf("STREAMS_BLOCKED %d, want 1", f.Limit)
		}
	})
}

// TestFlowMaxStreamsFromPeer: MAX_STREAMS raises the number of streams
// we may open (RFC 9000 section 4.6).
func TestFlowMaxStreamsFromPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamsUni = 1
		})
		tc.openUniStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamsUni, Limit: 2})
		if st := tc.openUniStream(); st.StreamID() != 7 {
			t.Fatalf("second stream %d, want 7", st.StreamID())
		}
	})
}

// TestFlowMaxStreamsSent: when the peer's streams end, we raise its
// stream limit with MAX_STREAMS (RFC 9000 section 4.6).
func TestFlowMaxStreamsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		for id := uint64(2); id < 42; id += 4 { // all 10 unidirectional streams
			tc.writeFrames(spaceApp, streamFrame(id, 0, "x", true))
		}
		for range 10 {
			st := tc.acceptUniStream()
			readNow(t, st, 10)
			readNow(t, st, 10) // the end of the stream
		}
		if f := tc.findFrame("streams done", wire.FrameTypeMaxStreamsUni); f.Limit <= 10 {
			t.Fatalf("MAX_STREAMS %d, want above 10", f.Limit)
		}
	})
}

// TestFlowMaxDataNotDecreasing: a MAX_DATA that does not raise the limit
// is ignored (RFC 9000 section 4.1).
func TestFlowMaxDataNotDecreasing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxData = 100
		})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxData, Limit: 50})
		mustWrite(t, tc.openStream(), 300)
		if _, end := sentStreamBytes(tc.readFrames(), 1); end != 100 {
			t.Fatalf("sent up to %d, want 100 (a lower MAX_DATA is ignored)", end)
		}
	})
}

// TestFlowPeerBlockedFramesAccepted: DATA_BLOCKED and STREAM_DATA_BLOCKED
// from the peer are informational: no error (RFC 9000 sections 19.12 and
// 19.13).
func TestFlowPeerBlockedFramesAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "x", false),
			wire.Frame{Type: wire.FrameTypeStreamDataBlocked, StreamID: 0, Limit: 1000},
			wire.Frame{Type: wire.FrameTypeDataBlocked, Limit: 5000},
			wire.Frame{Type: wire.FrameTypeStreamsBlockedBidi, Limit: 10})
		tc.wantOpen("blocked frames from the peer")
	})
}

// TestFlowMaxStreamsNotDecreasing: a MAX_STREAMS that does not raise the
// limit is ignored (RFC 9000 section 19.11).
func TestFlowMaxStreamsNotDecreasing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(_ *Config, p *wire.TransportParameters) {
			p.InitialMaxStreamsUni = 2
		})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamsUni, Limit: 1})
		tc.openUniStream()
		tc.openUniStream()
		tc.wantOpen("a lower MAX_STREAMS")
	})
}
