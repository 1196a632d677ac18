package quic

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of the receive path (conn_recv.go): which frames a
// packet may carry, and what a frame that breaks a rule costs. The
// connection is the server unless a test says otherwise: the test's
// bidirectional streams are 0, 4, 8..., its unidirectional ones 2, 6...;
// the connection's own are 1, 5... and 3, 7....

// TestRecvUnknownFrameType: a frame of unknown type is a connection error
// of type FRAME_ENCODING_ERROR (RFC 9000 section 12.4).
func TestRecvUnknownFrameType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, []byte{0x40, 0x55}) // type 0x55, two-byte varint
		tc.wantTransportClose("unknown frame type", FrameEncodingError)
	})
}

// TestRecvFrameTypeNotMinimal: a frame type must use the shortest
// encoding; a longer one is a PROTOCOL_VIOLATION (RFC 9000 section 12.4).
func TestRecvFrameTypeNotMinimal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, []byte{0x40, 0x01}) // PING in two bytes
		tc.wantTransportClose("PING type in two bytes", ProtocolViolation)
	})
}

// TestRecvTruncatedFrame: a frame cut short is a FRAME_ENCODING_ERROR
// (RFC 9000 section 12.4).
func TestRecvTruncatedFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, []byte{byte(wire.FrameTypeMaxStreamData), 0x00})
		tc.wantTransportClose("MAX_STREAM_DATA without its limit", FrameEncodingError)
	})
}

// TestRecvPacketWithoutFrames: a packet with no frames is a
// PROTOCOL_VIOLATION (RFC 9000 section 12.4).
func TestRecvPacketWithoutFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, nil)
		tc.wantTransportClose("empty packet", ProtocolViolation)
	})
}

// TestRecvStreamInInitial: STREAM frames are not allowed in Initial
// packets; receiving one is a PROTOCOL_VIOLATION (RFC 9000 sections 12.4
// and 12.5).
func TestRecvStreamInInitial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.writeFrames(spaceInitial, streamFrame(1, 0, "x", false))
		tc.wantTransportClose("STREAM in an Initial packet", ProtocolViolation)
	})
}

// TestRecvMaxDataInInitial: flow-control frames are 0-RTT/1-RTT only
// (RFC 9000 section 12.4, table 3).
func TestRecvMaxDataInInitial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.writeFrames(spaceInitial, wire.Frame{Type: wire.FrameTypeMaxData, Limit: 1 << 20})
		tc.wantTransportClose("MAX_DATA in an Initial packet", ProtocolViolation)
	})
}

// TestRecvHandshakeDoneFromClient: a server receiving HANDSHAKE_DONE
// treats it as a PROTOCOL_VIOLATION (RFC 9000 section 19.20).
func TestRecvHandshakeDoneFromClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeHandshakeDone})
		tc.wantTransportClose("HANDSHAKE_DONE from the client", ProtocolViolation)
	})
}

// TestRecvHandshakeDoneAtClient: a client takes HANDSHAKE_DONE (RFC 9000
// section 19.20) and acknowledges it.
func TestRecvHandshakeDoneAtClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, clientSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeHandshakeDone})
		tc.advanceToTimer()
		tc.wantFrameType("HANDSHAKE_DONE is ack-eliciting", wire.FrameTypeAck)
		tc.wantOpen("HANDSHAKE_DONE at the client")
	})
}

// TestRecvNewTokenFromClient: a server receiving NEW_TOKEN treats it as a
// PROTOCOL_VIOLATION (RFC 9000 section 19.7).
func TestRecvNewTokenFromClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeNewToken, Token: []byte("token")})
		tc.wantTransportClose("NEW_TOKEN from the client", ProtocolViolation)
	})
}

// TestRecvEmptyNewToken: a NEW_TOKEN frame with an empty token is a
// FRAME_ENCODING_ERROR (RFC 9000 section 19.7).
func TestRecvEmptyNewToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, clientSide)
		tc.writePayload(spaceApp, []byte{byte(wire.FrameTypeNewToken), 0})
		tc.wantTransportClose("empty NEW_TOKEN", FrameEncodingError)
	})
}

// TestRecvStreamOnSendOnlyStream: STREAM on a locally initiated
// unidirectional stream is a STREAM_STATE_ERROR (RFC 9000 section 19.8).
func TestRecvStreamOnSendOnlyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		tc.writeFrames(spaceApp, streamFrame(uint64(st.StreamID()), 0, "x", false))
		tc.wantTransportClose("STREAM on our unidirectional stream", StreamStateError)
	})
}

// TestRecvStreamOnUnopenedLocalStream: STREAM on a locally initiated
// stream not yet created is a STREAM_STATE_ERROR (RFC 9000 section 19.8).
func TestRecvStreamOnUnopenedLocalStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(1, 0, "x", false)) // server bidi stream 1
		tc.wantTransportClose("STREAM on a stream we never opened", StreamStateError)
	})
}

// TestRecvMaxStreamDataOnReceiveOnlyStream: MAX_STREAM_DATA for a stream
// that only receives is a STREAM_STATE_ERROR (RFC 9000 section 19.10).
func TestRecvMaxStreamDataOnReceiveOnlyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(2, 0, "x", false))
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamData, StreamID: 2, Limit: 5000})
		tc.wantTransportClose("MAX_STREAM_DATA for the peer's unidirectional stream", StreamStateError)
	})
}

// TestRecvStopSendingOnReceiveOnlyStream: STOP_SENDING for a stream that
// only receives is a STREAM_STATE_ERROR (RFC 9000 section 19.5).
func TestRecvStopSendingOnReceiveOnlyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStopSending, StreamID: 2, ErrorCode: 1})
		tc.wantTransportClose("STOP_SENDING for the peer's unidirectional stream", StreamStateError)
	})
}

// TestRecvStopSendingOnUnopenedLocalStream: STOP_SENDING for a locally
// initiated stream not yet created is a STREAM_STATE_ERROR (RFC 9000
// section 19.5).
func TestRecvStopSendingOnUnopenedLocalStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStopSending, StreamID: 5, ErrorCode: 1})
		tc.wantTransportClose("STOP_SENDING for a stream we never opened", StreamStateError)
	})
}

// TestRecvResetStreamOnSendOnlyStream: RESET_STREAM for a send-only
// stream is a STREAM_STATE_ERROR (RFC 9000 section 19.4).
func TestRecvResetStreamOnSendOnlyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeResetStream, StreamID: uint64(st.StreamID()), ErrorCode: 1})
		tc.wantTransportClose("RESET_STREAM for our unidirectional stream", StreamStateError)
	})
}

// TestRecvStreamBeyondLimit: opening a stream above the limit we
// advertised is a STREAM_LIMIT_ERROR (RFC 9000 section 4.6).
func TestRecvStreamBeyondLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide) // 10 bidirectional streams: 0 to 36
		tc.writeFrames(spaceApp, streamFrame(36, 0, "x", false))
		tc.wantOpen("the tenth stream")
		tc.writeFrames(spaceApp, streamFrame(40, 0, "x", false))
		tc.wantTransportClose("the eleventh stream", StreamLimitError)
	})
}

// TestRecvStreamOpensLowerStreams: a frame for a stream opens every lower
// numbered stream of its type, and they are accepted in order (RFC 9000
// section 3.2).
func TestRecvStreamOpensLowerStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(8, 0, "x", false))
		for _, id := range []StreamID{0, 4, 8} {
			if got := tc.acceptStream().StreamID(); got != id {
				t.Fatalf("accepted stream %d, want %d", got, id)
			}
		}
	})
}

// TestRecvOutOfOrderStreamData: STREAM frames arriving out of order are
// delivered to the reader in order (RFC 9000 section 2.2).
func TestRecvOutOfOrderStreamData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 5, "world", true))
		tc.writeFrames(spaceApp, streamFrame(0, 0, "hello", false))
		st := tc.acceptStream()
		if got, err := readNow(t, st, 100); got != "helloworld" {
			t.Fatalf("read %q (%v), want helloworld", got, err)
		}
	})
}

// TestRecvDuplicateStreamData: data received again at the same offsets
// is delivered once (RFC 9000 section 2.2).
func TestRecvDuplicateStreamData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 0, "hello", false))
		tc.writeFrames(spaceApp, streamFrame(0, 0, "hello", false), streamFrame(0, 3, "lo!", false))
		st := tc.acceptStream()
		if got, _ := readNow(t, st, 100); got != "hello!" {
			t.Fatalf("read %q, want hello!", got)
		}
		tc.wantOpen("overlapping data")
	})
}

// TestRecvDuplicatePacketIgnored: a packet whose number was already
// received is a duplicate and is not processed again (RFC 9000 section
// 12.3).
func TestRecvDuplicatePacketIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		pn := tc.nextPN[spaceApp]
		tc.writeFrames(spaceApp, streamFrame(0, 0, "abc", false))
		tc.writePacket(spaceApp, pn, wire.AppendStreamFrame(nil, 0, 3, []byte("xyz"), true, true))
		st := tc.acceptStream()
		if got, _ := readNow(t, st, 100); got != "abc" {
			t.Fatalf("read %q, want abc", got)
		}
		if got, err := readNow(t, st, 100); got != "" || !errors.Is(err, errDeadline) {
			t.Fatalf("read %q, %v; want nothing more and no end of stream", got, err)
		}
	})
}

// TestRecvUndecryptablePacketDropped: a packet that fails authentication
// is dropped without closing the connection or being acknowledged (RFC
// 9001 section 5.5, RFC 9000 section 12.2).
func TestRecvUndecryptablePacketDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		pkt := tc.sealPacket(nil, spaceApp, 100, []byte{byte(wire.FrameTypePing), 0, 0, 0})
		pkt[len(pkt)-1] ^= 0xff
		tc.writeDatagram(pkt)
		tc.advance(time.Second)
		tc.wantNoFrame("a packet that failed authentication")
		tc.wantOpen("a packet that failed authentication")
	})
}

// TestRecvAckOfUnsentPacket: acknowledging a packet never sent is a
// PROTOCOL_VIOLATION (RFC 9000 section 13.1).
func TestRecvAckOfUnsentPacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeAck, AckRanges: []wire.AckRange{{Smallest: 0, Largest: 1000}}})
		tc.wantTransportClose("ACK of packet 1000", ProtocolViolation)
	})
}

// TestRecvPingIsAcknowledged: PING makes its packet ack-eliciting (RFC
// 9000 sections 19.2 and 13.2.1).
func TestRecvPingIsAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		pn := tc.nextPN[spaceApp]
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.advanceToTimer()
		f := tc.wantFrameType("PING", wire.FrameTypeAck)
		if f.AckRanges[0].Largest != pn {
			t.Fatalf("ACK of %v, want largest %d", f.AckRanges, pn)
		}
	})
}

// TestRecvPathChallengeAnswered: PATH_CHALLENGE is answered with a
// PATH_RESPONSE echoing its data (RFC 9000 sections 8.2.2 and 19.18).
func TestRecvPathChallengeAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePathChallenge, PathData: data})
		if f := tc.findFrame("PATH_CHALLENGE", wire.FrameTypePathResponse); f.PathData != data {
			t.Fatalf("PATH_RESPONSE %x, want %x", f.PathData, data)
		}
	})
}

// TestRecvUnsolicitedPathResponse: a PATH_RESPONSE matching no challenge
// we sent is ignored (RFC 9000 section 8.2.3 leaves only a matching one
// meaningful).
func TestRecvUnsolicitedPathResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePathResponse, PathData: [8]byte{9}})
		tc.wantOpen("unsolicited PATH_RESPONSE")
	})
}

// TestRecvDatagramNotNegotiated: a DATAGRAM frame we did not advertise
// support for is a PROTOCOL_VIOLATION (RFC 9221 section 3).
func TestRecvDatagramNotNegotiated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeDatagram, Data: []byte("d")})
		tc.wantTransportClose("DATAGRAM without max_datagram_frame_size", ProtocolViolation)
	})
}

// TestRecvMaxStreamsTooLarge: a MAX_STREAMS above 2^60 is a
// FRAME_ENCODING_ERROR (RFC 9000 section 19.11).
func TestRecvMaxStreamsTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamsBidi, Limit: 1<<60 + 1})
		tc.wantTransportClose("MAX_STREAMS 2^60+1", FrameEncodingError)
	})
}

// TestRecvStreamsBlockedTooLarge: a STREAMS_BLOCKED above 2^60 is a
// FRAME_ENCODING_ERROR (RFC 9000 section 19.14).
func TestRecvStreamsBlockedTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStreamsBlockedUni, Limit: 1<<60 + 1})
		tc.wantTransportClose("STREAMS_BLOCKED 2^60+1", FrameEncodingError)
	})
}

// TestRecvStreamBeyondMaxOffset: STREAM data ending above 2^62-1 is a
// FRAME_ENCODING_ERROR (RFC 9000 section 19.8).
func TestRecvStreamBeyondMaxOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(0, 1<<62-2, "xyz", false))
		tc.wantTransportClose("STREAM ending past 2^62-1", FrameEncodingError)
	})
}

// TestRecvNewConnectionIDRetirePriorAboveSequence: Retire Prior To above
// the Sequence Number is a FRAME_ENCODING_ERROR (RFC 9000 section 19.15).
func TestRecvNewConnectionIDRetirePriorAboveSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, newCID(1, 2, 0xa1))
		tc.wantTransportClose("retire_prior_to 2 on sequence 1", FrameEncodingError)
	})
}

// TestRecvNewConnectionIDOverLimit: more active connection IDs than our
// active_connection_id_limit is a CONNECTION_ID_LIMIT_ERROR (RFC 9000
// section 5.1.1).
func TestRecvNewConnectionIDOverLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		var p []byte
		for seq := range uint64(remoteCIDLimit) {
			p = append(p, newCID(seq+1, 0, byte(0xa0+seq))...)
		}
		tc.writePayload(spaceApp, p)
		tc.wantTransportClose("one ID over the limit", ConnectionIDLimitError)
	})
}

// TestRecvNewConnectionIDSequenceReused: the same sequence number for a
// different connection ID is a PROTOCOL_VIOLATION (RFC 9000 section
// 19.15).
func TestRecvNewConnectionIDSequenceReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, newCID(1, 0, 0xa1))
		tc.writePayload(spaceApp, newCID(1, 0, 0xa2))
		tc.wantTransportClose("sequence 1 twice", ProtocolViolation)
	})
}

// TestRecvNewConnectionIDRepeated: the same NEW_CONNECTION_ID frame again
// (a retransmission) is no error (RFC 9000 section 19.15).
func TestRecvNewConnectionIDRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, newCID(1, 0, 0xa1))
		tc.writePayload(spaceApp, newCID(1, 0, 0xa1))
		tc.wantOpen("NEW_CONNECTION_ID repeated")
	})
}

// TestRecvRetirePriorToRetiresOld: Retire Prior To makes us retire the
// older IDs with RETIRE_CONNECTION_ID and use a newer one (RFC 9000
// section 5.1.2).
func TestRecvRetirePriorToRetiresOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, newCID(1, 1, 0xa1))
		tc.wantFrame("sequence 0 retired", wire.Frame{Type: wire.FrameTypeRetireConnectionID, SequenceNumber: 0})
		tc.conn.mu.Lock()
		dest := tc.conn.cids.dest
		tc.conn.mu.Unlock()
		if dest[0] != 0xa1 {
			t.Fatalf("destination ID %x, want the new one", dest)
		}
	})
}

// TestRecvRetireNeverIssued: retiring a sequence number we never issued
// is a PROTOCOL_VIOLATION (RFC 9000 section 19.16).
func TestRecvRetireNeverIssued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, retireCID(100))
		tc.wantTransportClose("RETIRE_CONNECTION_ID 100", ProtocolViolation)
	})
}

// TestRecvRetireReplaced: when the peer retires one of our IDs, we issue
// a new one (RFC 9000 section 5.1.1: keep the peer supplied up to its
// limit).
func TestRecvRetireReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide) // the peer's limit is 2: IDs 0 and 1
		tc.writePayload(spaceApp, retireCID(1))
		f := tc.wantFrameType("after retiring sequence 1", wire.FrameTypeNewConnectionID)
		if f.SequenceNumber != 2 {
			t.Fatalf("new ID with sequence %d, want 2", f.SequenceNumber)
		}
	})
}

// TestRecvCryptoBeyondBuffer: CRYPTO data far beyond what was received
// is a CRYPTO_BUFFER_EXCEEDED (RFC 9000 section 7.5).
func TestRecvCryptoBeyondBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeCrypto, Offset: 1 << 20, Data: []byte{1}})
		tc.wantTransportClose("CRYPTO at 1 MiB", CryptoBufferExceeded)
	})
}

// TestRecvRetireOwnDestination: retiring the connection ID the packet
// was sent to is a PROTOCOL_VIOLATION (RFC 9000 section 19.16).
func TestRecvRetireOwnDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writePayload(spaceApp, retireCID(0)) // sent to the ID of sequence 0
		tc.wantTransportClose("RETIRE_CONNECTION_ID of the packet's own ID", ProtocolViolation)
	})
}

// TestRecvMaxStreamDataOnUnopenedLocalStream: MAX_STREAM_DATA for a
// locally initiated stream not yet created is a STREAM_STATE_ERROR (RFC
// 9000 section 19.10).
func TestRecvMaxStreamDataOnUnopenedLocalStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeMaxStreamData, StreamID: 1, Limit: 5000})
		tc.wantTransportClose("MAX_STREAM_DATA for a stream we never opened", StreamStateError)
	})
}

// TestRecvStreamDataBlockedOnSendOnlyStream: STREAM_DATA_BLOCKED for a
// stream that only sends is a STREAM_STATE_ERROR (RFC 9000 section
// 19.13).
func TestRecvStreamDataBlockedOnSendOnlyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeStreamDataBlocked, StreamID: uint64(st.StreamID()), Limit: 0})
		tc.wantTransportClose("STREAM_DATA_BLOCKED for our unidirectional stream", StreamStateError)
	})
}

// TestRecvNewConnectionIDBadLength: a NEW_CONNECTION_ID with a
// connection ID of length 0 or above 20 is a FRAME_ENCODING_ERROR (RFC
// 9000 section 19.15).
func TestRecvNewConnectionIDBadLength(t *testing.T) {
	for _, n := range []int{0, 21} {
		synctest.Test(t, func(t *testing.T) {
			tc := newTestConn(t, serverSide)
			p := []byte{byte(wire.FrameTypeNewConnectionID), 1, 0, byte(n)}
			p = append(p, make([]byte, n+16)...)
			tc.writePayload(spaceApp, p)
			tc.wantTransportClose("connection ID length out of range", FrameEncodingError)
		})
	}
}

// TestRecvAckRangeUnderflow: an ACK range reaching below packet 0 is a
// FRAME_ENCODING_ERROR (RFC 9000 section 19.3.1).
func TestRecvAckRangeUnderflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		// Largest 1, delay 0, no more ranges, First ACK Range 5.
		tc.writePayload(spaceApp, []byte{byte(wire.FrameTypeAck), 1, 0, 0, 5})
		tc.wantTransportClose("ACK of packets 1 down to -4", FrameEncodingError)
	})
}

// TestRecvReorderedPacketProcessed: a packet arriving after a later one
// is processed and acknowledged at once (RFC 9000 sections 12.3 and
// 13.2.1).
func TestRecvReorderedPacketProcessed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		pn := tc.nextPN[spaceApp]
		tc.writePacket(spaceApp, pn+1, wire.AppendStreamFrame(nil, 0, 3, []byte("def"), true, true))
		tc.readFrames() // the ACK of the gap
		tc.writePacket(spaceApp, pn, wire.AppendStreamFrame(nil, 0, 0, []byte("abc"), false, true))
		if f := tc.wantFrameType("a reordered packet", wire.FrameTypeAck); f.AckRanges[0].Smallest > pn {
			t.Fatalf("ACK %v does not cover %d", f.AckRanges, pn)
		}
		if got, _ := readNow(t, tc.acceptStream(), 10); got != "abcdef" {
			t.Fatalf("read %q, want abcdef", got)
		}
	})
}

// TestRecvPeerKeyUpdate: after the peer updates its keys (the Key Phase
// bit flips), the connection reads the new phase and answers in it (RFC
// 9001 section 6.2).
func TestRecvPeerKeyUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		// An update waits for an ACK of a packet of the current phase.
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.wantFrameType("PINGs in the first key phase", wire.FrameTypeAck)
		if err := tc.keys.NextGeneration(); err != nil {
			t.Fatal(err)
		}
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.wantFrameType("PINGs in the new key phase", wire.FrameTypeAck)
		tc.conn.mu.Lock()
		gen := tc.conn.keys.app.Generation()
		tc.conn.mu.Unlock()
		if gen != 1 {
			t.Fatalf("key generation %d after the peer's update, want 1", gen)
		}
		tc.wantOpen("a key update")
	})
}

// TestRecvPeerKeyUpdateTooSoon: a peer that updates its keys before we
// acknowledged a packet of the current phase breaks the rules: a
// KEY_UPDATE_ERROR (RFC 9001 section 6.2).
func TestRecvPeerKeyUpdateTooSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		if err := tc.keys.NextGeneration(); err != nil {
			t.Fatal(err)
		}
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.wantTransportClose("a key update before any ACK of ours", KeyUpdateError)
	})
}
