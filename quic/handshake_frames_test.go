package quic

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of a client's handshake: the test is the server
// (newDialingTestConn, serveHandshake), with crypto/tls behind it.

// TestHandshakeReplyCoalesced: the client's answer to the server's
// flight coalesces its Initial ACK and its Handshake packet with the
// Finished in one datagram, Initial first, padded to 1200 bytes (RFC 9000
// sections 12.2 and 14.1).
func TestHandshakeReplyCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.serveHandshake(nil)
		var fin testFrame
		for _, f := range tc.readFrames() {
			if f.space == spaceHandshake && f.Type == wire.FrameTypeCrypto {
				fin = f
			}
		}
		if fin.dgram == 0 {
			t.Fatal("no Handshake CRYPTO from the client")
		}
		var spaces []int
		for _, f := range tc.framesOfDatagram(fin.dgram) {
			if len(spaces) == 0 || spaces[len(spaces)-1] != f.space {
				spaces = append(spaces, f.space)
			}
		}
		if len(spaces) < 2 || spaces[0] != spaceInitial || spaces[1] != spaceHandshake || fin.size < 1200 {
			t.Fatalf("packets of spaces %v in a datagram of %d bytes, want Initial then Handshake in at least 1200", spaces, fin.size)
		}
	})
}

// TestHandshakeCompletesAtClient: once the server's Finished is read the
// client's handshake is complete (RFC 9001 section 4.1.1).
func TestHandshakeCompletesAtClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.serveHandshake(nil)
		select {
		case <-tc.conn.HandshakeComplete():
		default:
			t.Fatal("the handshake did not complete")
		}
		tc.wantOpen("after the handshake")
	})
}

// TestHandshakeClientDropsInitialKeys: once the client sent a Handshake
// packet it discards its Initial keys: an Initial packet is not
// acknowledged any more (RFC 9001 section 4.9.1).
func TestHandshakeClientDropsInitialKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.serveHandshake(nil)
		tc.readFrames()
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceInitial, wire.Frame{Type: wire.FrameTypePing})
		tc.advanceToTimer()
		for _, f := range tc.readFrames() {
			if f.space == spaceInitial {
				t.Fatalf("Initial %s after the client sent Handshake", describeFrame(&f.Frame))
			}
		}
	})
}

// TestHandshakeDoneConfirmsClient: HANDSHAKE_DONE confirms the handshake
// and the client discards its Handshake keys: a Handshake packet it
// acknowledged before is not acknowledged after (RFC 9001 sections 4.1.2
// and 4.9.2).
func TestHandshakeDoneConfirmsClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.serveHandshake(nil)
		tc.readFrames()
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceHandshake, wire.Frame{Type: wire.FrameTypePing})
		if f := tc.findFrame("a Handshake PING before confirmation", wire.FrameTypeAck); f.space != spaceHandshake {
			t.Fatalf("ACK in space %d, want Handshake", f.space)
		}
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypeHandshakeDone})
		tc.readFrames()
		tc.writeFrames(spaceHandshake, wire.Frame{Type: wire.FrameTypePing})
		tc.advanceToTimer()
		for _, f := range tc.readFrames() {
			if f.space == spaceHandshake {
				t.Fatalf("Handshake %s after HANDSHAKE_DONE", describeFrame(&f.Frame))
			}
		}
	})
}

// TestHandshakeStreamInHandshakePacket: a STREAM frame in a Handshake
// packet is a PROTOCOL_VIOLATION (RFC 9000 section 12.4).
func TestHandshakeStreamInHandshakePacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.serveHandshake(nil)
		tc.writeFrames(spaceHandshake, streamFrame(1, 0, "x", false))
		tc.wantTransportClose("STREAM in a Handshake packet", ProtocolViolation)
	})
}

// TestHandshakeWrongOriginalDestinationID: a server whose
// original_destination_connection_id is not the ID the client first
// used fails the handshake with TRANSPORT_PARAMETER_ERROR (RFC 9000
// section 7.3).
func TestHandshakeWrongOriginalDestinationID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		p := defaultTestPeerParams()
		p.OriginalDestinationConnectionID = bytes.Repeat([]byte{0xbb}, 8)
		p.HasOriginalDestinationConnectionID = true
		tc.serveHandshake(p)
		tc.wantTransportClose("a wrong original_destination_connection_id", TransportParameterError)
	})
}

// TestHandshakeWrongInitialSourceID: a server whose
// initial_source_connection_id is not the Source Connection ID of its
// Initial fails the handshake with TRANSPORT_PARAMETER_ERROR (RFC 9000
// section 7.3).
func TestHandshakeWrongInitialSourceID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		p := defaultTestPeerParams()
		p.InitialSourceConnectionID = bytes.Repeat([]byte{0xcc}, 8)
		p.HasInitialSourceConnectionID = true
		tc.serveHandshake(p)
		tc.wantTransportClose("a wrong initial_source_connection_id", TransportParameterError)
	})
}

// TestHandshakeServerLimitsApply: the stream limits of the server's
// transport parameters bound the client's streams (RFC 9000 sections
// 4.6 and 18.2).
func TestHandshakeServerLimitsApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		p := defaultTestPeerParams()
		p.InitialMaxStreamsBidi = 1
		tc.serveHandshake(p)
		tc.openStream()
		if _, err := tc.conn.OpenStream(); err == nil {
			t.Fatal("a second stream opened over the server's limit of 1")
		}
	})
}
