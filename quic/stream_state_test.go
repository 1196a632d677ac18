package quic

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of stream states (RFC 9000 section 3): resets, STOP_SENDING,
// FIN and final sizes. The connection is the server.

// isStreamError reports whether err is a StreamError of id with code,
// from the peer (remote) or ours.
func isStreamError(err error, id StreamID, code StreamErrorCode, remote bool) bool {
	var se *StreamError
	return errors.As(err, &se) && se.StreamID == id && se.ErrorCode == code && se.Remote == remote
}

// TestStreamPeerResetEndsRead: RESET_STREAM ends the receiving part:
// the reader gets the peer's error code (RFC 9000 sections 3.2 and 19.4).
func TestStreamPeerResetEndsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", false))
		st := tc.acceptStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 7, FinalSize: 3})
		if _, err := readNow(t, st, 10); !isStreamError(err, 0, 7, true) {
			t.Fatalf("read after RESET_STREAM: %v, want the peer's code 7", err)
		}
	})
}

// TestStreamDataAfterResetIgnored: STREAM frames after RESET_STREAM,
// within the final size, are no error (RFC 9000 section 3.2).
func TestStreamDataAfterResetIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 7, FinalSize: 6})
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abcdef", true))
		tc.wantOpen("data within the final size after the reset")
	})
}

// TestStreamStopSendingAnsweredWithReset: STOP_SENDING makes us reset
// the stream with RESET_STREAM carrying its error code and the bytes
// sent as final size (RFC 9000 sections 3.5 and 19.5).
func TestStreamStopSendingAnsweredWithReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openStream()
		mustWrite(t, st, 10)
		tc.findFrame("data", wire.FrameTypeStream)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStopSending, StreamID: 1, ErrorCode: 9})
		tc.wantFrame("STOP_SENDING", wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 1, ErrorCode: 9, FinalSize: 10})
		if _, err := st.Write([]byte("x")); !isStreamError(err, 1, 9, true) {
			t.Fatalf("write after STOP_SENDING: %v, want the peer's code 9", err)
		}
	})
}

// TestStreamCancelReadSendsStopSending: cancelling a read asks the peer
// to stop with STOP_SENDING (RFC 9000 sections 3.5 and 19.5).
func TestStreamCancelReadSendsStopSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", false))
		tc.acceptStream().CancelRead(4)
		tc.wantFrame("CancelRead", wire.Frame{Type: wire.FrameTypeStopSending, StreamID: 0, ErrorCode: 4})
	})
}

// TestStreamCancelReadAfterReset: a stream the peer reset needs no
// STOP_SENDING (RFC 9000 section 3.5).
func TestStreamCancelReadAfterReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(2, 0, "abc", false))
		st := tc.acceptUniStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 2, ErrorCode: 1, FinalSize: 3})
		st.CancelRead(4)
		tc.wantNoFrameOfType("CancelRead after RESET_STREAM", wire.FrameTypeStopSending)
	})
}

// TestStreamCancelWriteSendsReset: cancelling a write resets the stream:
// RESET_STREAM with our code and the final size sent so far (RFC 9000
// sections 3.1 and 19.4).
func TestStreamCancelWriteSendsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		mustWrite(t, st, 20)
		tc.findFrame("data", wire.FrameTypeStream)
		st.CancelWrite(5)
		tc.wantFrame("CancelWrite", wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 3, ErrorCode: 5, FinalSize: 20})
	})
}

// TestStreamResetRetransmitted: a lost RESET_STREAM is sent again (RFC
// 9000 section 13.3).
func TestStreamResetRetransmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		st.CancelWrite(5)
		want := wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 3, ErrorCode: 5}
		tc.wantFrame("CancelWrite", want)
		tc.advanceToTimer() // the PTO: the packet is presumed lost
		tc.findFrame("the first RESET_STREAM was not acknowledged", wire.FrameTypeResetStream)
	})
}

// TestStreamCloseSendsFin: closing the sending part sends the FIN after
// the data (RFC 9000 sections 3.1 and 19.8).
func TestStreamCloseSendsFin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		if _, err := st.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		st.Close()
		var end uint64
		fin := false
		for _, f := range tc.readFrames() {
			if f.Type == wire.FrameTypeStream {
				end, fin = f.Offset+uint64(len(f.Data)), f.Fin
			}
		}
		if end != 5 || !fin {
			t.Fatalf("stream ended at %d with FIN %v, want FIN at 5", end, fin)
		}
	})
}

// TestStreamEmptyFin: a STREAM frame with no data and the FIN ends the
// stream at size 0 (RFC 9000 section 19.8).
func TestStreamEmptyFin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(2, 0, "", true))
		if got, err := readNow(t, tc.acceptUniStream(), 10); got != "" || err != io.EOF {
			t.Fatalf("read %q, %v; want io.EOF", got, err)
		}
	})
}

// TestStreamDataBeyondFinalSize: data beyond the final size a FIN set is
// a FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamDataBeyondFinalSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.writeFrames(spaceApp, streamFrame(0, 3, "d", false))
		tc.wantTransportClose("data after the final size", FinalSizeError)
	})
}

// TestStreamFinalSizeChanged: a second FIN at another offset is a
// FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamFinalSizeChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abcdef", true))
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.wantTransportClose("FIN at 3 after FIN at 6", FinalSizeError)
	})
}

// TestStreamFinBelowReceivedData: a FIN below data already received is
// a FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamFinBelowReceivedData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abcdef", false))
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.wantTransportClose("FIN at 3 after data up to 6", FinalSizeError)
	})
}

// TestStreamFinRepeated: the same FIN again (a retransmission) is no
// error (RFC 9000 section 4.5).
func TestStreamFinRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.writeFrames(spaceApp, streamFrame(0, 3, "", true))
		tc.wantOpen("the FIN repeated")
	})
}

// TestStreamResetBelowReceivedData: a RESET_STREAM final size below the
// data received is a FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamResetBelowReceivedData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abcdef", false))
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 1, FinalSize: 3})
		tc.wantTransportClose("final size 3 after data up to 6", FinalSizeError)
	})
}

// TestStreamResetChangesFinalSize: a RESET_STREAM whose final size
// differs from the FIN's is a FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamResetChangesFinalSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 1, FinalSize: 4})
		tc.wantTransportClose("final size 4 after a FIN at 3", FinalSizeError)
	})
}

// TestStreamResetThenStreamBeyond: after RESET_STREAM fixed the final
// size, data beyond it is a FINAL_SIZE_ERROR (RFC 9000 section 4.5).
func TestStreamResetThenStreamBeyond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 1, FinalSize: 3})
		tc.writeFrames(spaceApp, streamFrame(0, 2, "xy", false))
		tc.wantTransportClose("data up to 4 after a reset at 3", FinalSizeError)
	})
}

// TestStreamStopSendingAfterAllAcked: STOP_SENDING for a stream whose
// data and FIN were all acknowledged needs no reset (RFC 9000 section
// 3.5: only the Ready and Send states answer with RESET_STREAM).
func TestStreamStopSendingAfterAllAcked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openStream()
		mustWrite(t, st, 10)
		st.Close()
		tc.readFrames()
		tc.writeAck(spaceApp)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStopSending, StreamID: 1, ErrorCode: 9})
		tc.wantNoFrameOfType("STOP_SENDING for a finished stream", wire.FrameTypeResetStream)
		tc.wantOpen("STOP_SENDING for a finished stream")
	})
}

// TestStreamResetAfterFinSameSize: RESET_STREAM after a FIN, with the
// same final size, is no error (RFC 9000 section 4.5).
func TestStreamResetAfterFinSameSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", true))
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: 0, ErrorCode: 1, FinalSize: 3})
		tc.wantOpen("RESET_STREAM at the FIN's final size")
	})
}

// TestStreamFrameAfterStreamDone: a retransmitted STREAM frame for a
// stream already read to its end is ignored: no error and no new stream
// (RFC 9000 section 3.2, the Data Read state is terminal).
func TestStreamFrameAfterStreamDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(2, 0, "abc", true))
		st := tc.acceptUniStream()
		if got, err := readNow(t, st, 10); got != "abc" {
			t.Fatalf("read %q, %v", got, err)
		}
		if _, err := readNow(t, st, 10); err != io.EOF {
			t.Fatalf("read at the end: %v, want io.EOF", err)
		}
		tc.writeFrames(spaceApp, streamFrame(2, 0, "abc", true))
		tc.wantOpen("STREAM for a finished stream")
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if st, err := tc.conn.AcceptUniStream(ctx); err == nil {
			t.Fatalf("stream %d accepted again", st.StreamID())
		}
	})
}
