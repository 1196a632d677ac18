package quic

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

func TestMalformedFramesCloseWithRightCode(t *testing.T) {
	stream := func(id, off uint64, n int) []byte {
		return wire.AppendStreamFrame(nil, id, off, make([]byte, n), false, true)
	}
	tests := []struct {
		name    string
		payload []byte
		code    TransportErrorCode
	}{
		{"unknown frame type", []byte{0x40, 0x55}, FrameEncodingError},
		{"truncated STREAM", []byte{0x0a, 0x00}, FrameEncodingError},
		{"stream beyond limit", stream(4*10, 0, 1), StreamLimitError},
		{"receive on our uni stream", stream(3, 0, 1), StreamStateError},
		{"stream flow control", stream(0, 2000, 1), FlowControlError},
		{"HANDSHAKE_DONE from client", []byte{byte(wire.FrameTypeHandshakeDone)}, ProtocolViolation},
		{"ACK of unsent packet", wire.AppendAckFrame(nil, []wire.AckRange{{Smallest: 5, Largest: 9}}, 0), ProtocolViolation},
		{"CRYPTO far ahead", wire.AppendCryptoFrame(nil, 1<<20, []byte{1}), CryptoBufferExceeded},
		{"empty packet", nil, ProtocolViolation},
		{"NEW_CONNECTION_ID retire_prior_to above sequence", newCID(1, 2, 0xa1), FrameEncodingError},
		{"NEW_CONNECTION_ID over our limit", cat(newCID(1, 0, 0xa1), newCID(2, 0, 0xa2), newCID(3, 0, 0xa3), newCID(4, 0, 0xa4)), ConnectionIDLimitError},
		{"NEW_CONNECTION_ID sequence reused", cat(newCID(1, 0, 0xa1), newCID(1, 0, 0xa2)), ProtocolViolation},
		{"NEW_CONNECTION_ID ID reused", cat(newCID(1, 0, 0xa1), newCID(2, 0, 0xa1)), ProtocolViolation},
		{"NEW_CONNECTION_ID retires too many", newCID(1000, 1000, 0xa1), ConnectionIDLimitError},
		{"RETIRE_CONNECTION_ID never issued", retireCID(100), ProtocolViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newOfflineConn(t)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.processPayload(spaceApp, wire.PacketType1RTT, 0, tt.payload, time.Now())
			var te *TransportError
			if !errors.As(c.close.err, &te) || te.ErrorCode != tt.code || te.Remote {
				t.Fatalf("close error %v, want local %s", c.close.err, tt.code)
			}
			if !errors.Is(c.close.err, net.ErrClosed) {
				t.Fatal("close error does not match net.ErrClosed")
			}
		})
	}
}

func TestValidFramesKeepConnectionOpen(t *testing.T) {
	c := newOfflineConn(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	var p []byte
	p = wire.AppendStreamFrame(p, 0, 0, []byte("hello"), true, true)
	p = append(p, byte(wire.FrameTypePing))
	p = wire.AppendFrame(p, &wire.Frame{Type: wire.FrameTypeMaxData, Limit: 1 << 21})
	c.processPayload(spaceApp, wire.PacketType1RTT, 0, p, time.Now())
	if c.close.err != nil {
		t.Fatal(c.close.err)
	}
	if len(c.streams.acceptBidi) != 1 {
		t.Fatalf("%d streams to accept, want 1", len(c.streams.acceptBidi))
	}
	buf := make([]byte, 10)
	if n, _ := c.streams.acceptBidi[0].recv.Read(buf); string(buf[:n]) != "hello" {
		t.Fatalf("stream data %q", buf[:n])
	}
}

func FuzzFrames(f *testing.F) {
	f.Add([]byte{0x01})
	f.Add(wire.AppendStreamFrame(nil, 0, 0, []byte("data"), true, true))
	f.Add(wire.AppendAckFrame(nil, []wire.AckRange{{Smallest: 0, Largest: 0}}, 0))
	f.Add([]byte{0x04, 0x00, 0x01, 0x02})
	f.Add([]byte{0x05, 0x04, 0x01})
	f.Add(wire.AppendCryptoFrame(nil, 0, []byte{0x16, 0x03}))
	f.Add(cat(newCID(1, 0, 0xa1), newCID(2, 1, 0xa2)))
	f.Add(cat(retireCID(1), retireCID(0)))
	c := newOfflineConn(f)
	var pn uint64
	f.Fuzz(func(t *testing.T, payload []byte) {
		// Reuse one connection until a payload closes it.
		if c.close.err != nil {
			c = newOfflineConn(t)
			pn = 0
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.processPayload(spaceApp, wire.PacketType1RTT, pn, payload, time.Now())
		pn++
		// Whatever state the frames left, building packets must not fail.
		c.sendLocked(time.Now())
		c.send.pending = nil
	})
}

// newCID is a NEW_CONNECTION_ID frame whose ID and token are derived from
// tag, so equal tags give equal frames.
func newCID(seq, retirePriorTo uint64, tag byte) []byte {
	f := wire.Frame{
		Type:           wire.FrameTypeNewConnectionID,
		SequenceNumber: seq,
		RetirePriorTo:  retirePriorTo,
		ConnectionID:   []byte{tag, tag, tag, tag, tag, tag, tag, tag},
	}
	f.StatelessResetToken[0] = tag
	return wire.AppendFrame(nil, &f)
}

func retireCID(seq uint64) []byte {
	return wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeRetireConnectionID, SequenceNumber: seq})
}

func cat(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = append(b, f...)
	}
	return b
}
