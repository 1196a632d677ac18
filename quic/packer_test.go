package quic

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of what the packer (packer.go) builds: ACK timing and
// placement, Initial padding, datagram sizes, STREAM frame splitting,
// retransmission of lost frames and PTO probes.

// sentStreamBytes sums up the STREAM frames of id among frames: the
// bytes carried (counting resends) and the highest end.
func sentStreamBytes(frames []testFrame, id uint64) (n, end uint64) {
	for _, f := range frames {
		if f.Type == wire.FrameTypeStream && f.StreamID == id {
			n += uint64(len(f.Data))
			end = max(end, f.Offset+uint64(len(f.Data)))
		}
	}
	return n, end
}

// TestPackerAcksAfterMaxAckDelay: a lone ack-eliciting packet is
// acknowledged max_ack_delay later, the delay encoded with our
// ack_delay_exponent (RFC 9000 sections 13.2.1, 18.2 and 19.3).
func TestPackerAcksAfterMaxAckDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.wantNoFrame("one PING is not acknowledged at once")
		if d := tc.advanceToTimer(); d != 25*time.Millisecond {
			t.Errorf("ACK after %v, want 25ms", d)
		}
		f := tc.wantFrameType("the ACK is due", wire.FrameTypeAck)
		if f.AckDelay != 25000>>wire.DefaultAckDelayExponent {
			t.Errorf("ACK Delay field %d, want 25 ms in units of 8 µs", f.AckDelay)
		}
	})
}

// TestPackerAcksEverySecondPacket: the second ack-eliciting packet is
// acknowledged at once (RFC 9000 section 13.2.2).
func TestPackerAcksEverySecondPacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		f := tc.wantFrameType("two PINGs", wire.FrameTypeAck)
		if f.AckRanges[0].Largest != tc.nextPN[spaceApp]-1 {
			t.Fatalf("ACK %v, want the second PING acknowledged", f.AckRanges)
		}
	})
}

// TestPackerNoAckForNonElicitingPackets: packets with only non-eliciting
// frames are not acknowledged on their own (RFC 9000 section 13.2.1).
func TestPackerNoAckForNonElicitingPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		for range 4 {
			tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePadding, PaddingLen: 10})
		}
		tc.advance(time.Second)
		tc.wantNoFrame("PADDING only")
	})
}

// TestPackerAckAtOnceOnGap: a packet that leaves a gap below it is
// acknowledged at once, and the ACK reports both ranges (RFC 9000
// sections 13.2.1 and 19.3.1).
func TestPackerAckAtOnceOnGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		first := tc.nextPN[spaceApp]
		tc.writePacket(spaceApp, first, []byte{byte(wire.FrameTypePing)})
		tc.writePacket(spaceApp, first+2, []byte{byte(wire.FrameTypePing)})
		f := tc.wantFrameType("a packet after a gap", wire.FrameTypeAck)
		if len(f.AckRanges) != 2 || f.AckRanges[0] != (wire.AckRange{Smallest: first + 2, Largest: first + 2}) || f.AckRanges[1].Largest != first {
			t.Fatalf("ACK ranges %v, want [%d] and [..%d]", f.AckRanges, first+2, first)
		}
	})
}

// TestPackerAckRidesWithData: an ACK that is not due yet goes with the
// next ack-eliciting packet, in front of its frames (RFC 9000 section
// 13.2.1 lets it; it saves a packet).
func TestPackerAckRidesWithData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		mustWrite(t, tc.openUniStream(), 10)
		ack := tc.wantFrameType("data after a PING", wire.FrameTypeAck)
		data := tc.wantFrameType("data after a PING", wire.FrameTypeStream)
		if ack.pn != data.pn {
			t.Fatalf("ACK in packet %d, STREAM in %d: want one packet", ack.pn, data.pn)
		}
	})
}

// TestPackerClientInitialPadded: a client pads datagrams carrying
// Initial packets to 1200 bytes (RFC 9000 section 14.1).
func TestPackerClientInitialPadded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		if f := tc.findFrame("the first flight", wire.FrameTypeCrypto); f.size < 1200 || f.space != spaceInitial {
			t.Fatalf("CRYPTO in space %d, datagram of %d bytes; want an Initial in at least 1200", f.space, f.size)
		}
	})
}

// TestPackerClientHelloInCrypto: the client's first Initial carries the
// ClientHello from CRYPTO offset 0 (RFC 9000 sections 7 and 17.2.2).
func TestPackerClientHelloInCrypto(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		f := tc.findFrame("the first flight", wire.FrameTypeCrypto)
		if f.Offset != 0 || len(f.Data) == 0 || f.Data[0] != 1 { // handshake type client_hello
			t.Fatalf("CRYPTO at %d starting %x, want a ClientHello at 0", f.Offset, f.Data[:min(4, len(f.Data))])
		}
	})
}

// TestPackerInitialPTO: without an answer the client sends its Initial
// flight again after the PTO, 999 ms with the initial RTT of 333 ms (RFC
// 9002 sections 6.2.1 and 6.2.4).
func TestPackerInitialPTO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		first := tc.findFrame("the first flight", wire.FrameTypeCrypto)
		tc.readFrames()
		if d := tc.advanceToTimer(); d != 999*time.Millisecond {
			t.Errorf("probe after %v, want 999ms", d)
		}
		again := tc.findFrame("the PTO", wire.FrameTypeCrypto)
		if again.Offset != 0 || !bytes.Equal(again.Data, first.Data) || again.pn <= first.pn || again.size < 1200 {
			t.Fatalf("probe: CRYPTO at %d of %d bytes in packet %d (datagram %d bytes); want the ClientHello again, in a new packet of 1200",
				again.Offset, len(again.Data), again.pn, again.size)
		}
	})
}

// TestPackerInitialAckedAtOnce: an ack-eliciting Initial packet is
// acknowledged at once, and the client's datagram with that ACK is
// padded too (RFC 9000 sections 13.2.1 and 14.1).
func TestPackerInitialAckedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newDialingTestConn(t)
		tc.readFrames()
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceInitial, wire.Frame{Type: wire.FrameTypePing})
		f := tc.wantFrameType("an Initial PING", wire.FrameTypeAck)
		if f.space != spaceInitial || f.AckRanges[0].Largest != 0 || f.size < 1200 {
			t.Fatalf("ACK %v in space %d, datagram of %d bytes; want an Initial ACK of 0 in 1200 bytes", f.AckRanges, f.space, f.size)
		}
	})
}

// TestPackerDatagramsWithinMaxSize: without path MTU discovery no
// datagram exceeds 1200 bytes, however much data is waiting (RFC 9000
// section 14).
func TestPackerDatagramsWithinMaxSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 20000)
		frames := tc.readFrames()
		if len(frames) == 0 {
			t.Fatal("nothing sent")
		}
		for _, f := range frames {
			if f.size > 1200 {
				t.Fatalf("datagram of %d bytes", f.size)
			}
		}
	})
}

// TestPackerSplitsStreamData: data larger than a packet goes in STREAM
// frames of consecutive offsets, the FIN on the last (RFC 9000 sections
// 2.2 and 19.8).
func TestPackerSplitsStreamData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		mustWrite(t, st, 5000)
		st.Close()
		var next uint64
		frames := 0
		fin := false
		for _, f := range tc.readFrames() {
			if f.Type != wire.FrameTypeStream {
				continue
			}
			if f.Offset != next || fin {
				t.Fatalf("STREAM at %d after data up to %d (FIN seen: %v)", f.Offset, next, fin)
			}
			next += uint64(len(f.Data))
			fin = f.Fin
			frames++
		}
		if next != 5000 || !fin || frames < 5 {
			t.Fatalf("%d STREAM frames up to %d, FIN %v; want at least 5 up to 5000 with the FIN", frames, next, fin)
		}
	})
}

// TestPackerRetransmitsLostData: a packet three below an acknowledged one
// is lost, and its STREAM data is sent again in a new packet (RFC 9002
// section 6.1.1, RFC 9000 section 13.3).
func TestPackerRetransmitsLostData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 6000)
		first := tc.findFrame("data", wire.FrameTypeStream)
		tc.readFrames()
		tc.writeAck(spaceApp, first.pn)
		again := tc.findFrame("the first packet was lost", wire.FrameTypeStream)
		if again.Offset != first.Offset || len(again.Data) != len(first.Data) || again.pn <= first.pn {
			t.Fatalf("resent %d bytes at %d in packet %d; want %d at %d in a new packet", len(again.Data), again.Offset, again.pn, len(first.Data), first.Offset)
		}
	})
}

// TestPackerNoRetransmitOfAckedData: data acknowledged is never sent
// again, even after a PTO (RFC 9000 section 13.3).
func TestPackerNoRetransmitOfAckedData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 100)
		tc.findFrame("data", wire.FrameTypeStream)
		tc.writeAck(spaceApp)
		tc.advance(5 * time.Second)
		tc.wantNoFrameOfType("acknowledged data", wire.FrameTypeStream)
	})
}

// TestPackerPTOResendsData: at the PTO the probe carries the
// unacknowledged data again (RFC 9002 section 6.2.4).
func TestPackerPTOResendsData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 100)
		first := tc.findFrame("data", wire.FrameTypeStream)
		tc.advanceToTimer()
		again := tc.findFrame("the PTO", wire.FrameTypeStream)
		if again.Offset != 0 || len(again.Data) != 100 || again.pn <= first.pn {
			t.Fatalf("probe: %d bytes at %d in packet %d; want the 100 bytes again in a new packet", len(again.Data), again.Offset, again.pn)
		}
	})
}

// TestPackerPTOResendsLaterData: while nothing is acknowledged, each PTO
// resends data that no earlier PTO resent: the data written after the
// first probe goes out again at the second, not the first data a third
// time (RFC 9002 section 6.2.4: a probe carries unacknowledged data). A
// server whose HANDSHAKE_DONE flight was lost, with the peer's ACKs lost
// too, otherwise probed with that flight forever and never resent the
// response that followed it (TestCorruptHandshakesQuicGoClientOurServer).
func TestPackerPTOResendsLaterData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 100)
		first := tc.findFrame("the first data", wire.FrameTypeStream)
		tc.advanceToTimer()
		tc.findFrame("the first PTO", wire.FrameTypeStream)
		tc.readFrames()
		mustWrite(t, tc.openUniStream(), 100)
		later := tc.findFrame("the later data", wire.FrameTypeStream)
		if later.StreamID == first.StreamID {
			t.Fatalf("both writes on stream %d", later.StreamID)
		}
		tc.readFrames()
		for pto := 2; pto <= 3; pto++ {
			tc.advanceToTimer()
			resent := map[uint64]bool{}
			for _, f := range tc.readFrames() {
				if f.Type == wire.FrameTypeStream {
					resent[f.StreamID] = true
				}
			}
			if !resent[later.StreamID] {
				t.Fatalf("PTO %d resent streams %v, want the later stream %d too", pto, resent, later.StreamID)
			}
		}
	})
}

// TestPackerPTOSendsPing: a probe with nothing to resend is a PING (RFC
// 9002 section 6.2.4).
func TestPackerPTOSendsPing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, _ *wire.TransportParameters) {
			c.KeepAlivePeriod = 2 * time.Second
		})
		tc.advance(2 * time.Second)
		ping := tc.wantFrame("keep-alive", wire.Frame{Type: wire.FrameTypePing})
		tc.advanceToTimer()
		if f := tc.wantFrame("the PTO", wire.Frame{Type: wire.FrameTypePing}); f.pn <= ping.pn {
			t.Fatalf("probe in packet %d after %d", f.pn, ping.pn)
		}
	})
}

// TestPackerPTOBacksOff: each PTO without an answer doubles the next
// (RFC 9002 section 6.2.1).
func TestPackerPTOBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 100)
		tc.readFrames()
		var waits []time.Duration
		for range 3 {
			waits = append(waits, tc.advanceToTimer())
			tc.findFrame("a probe", wire.FrameTypeStream)
		}
		if waits[1] != 2*waits[0] || waits[2] != 2*waits[1] {
			t.Fatalf("probes after %v, want each twice the one before", waits)
		}
	})
}

// TestPackerPacketNumbersIncrease: every packet gets a larger number
// than the one before, retransmissions too (RFC 9000 section 12.3).
func TestPackerPacketNumbersIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		mustWrite(t, tc.openUniStream(), 3000)
		tc.advanceToTimer()
		tc.advanceToTimer()
		tc.readFrames()
		pns := tc.received[spaceApp]
		for i := 1; i < len(pns); i++ {
			if pns[i] <= pns[i-1] {
				t.Fatalf("packet %d after %d", pns[i], pns[i-1])
			}
		}
	})
}

// TestPackerInitialCongestionWindow: before any acknowledgment of data,
// the bytes in flight stay within the initial window, at most 14720
// bytes; an ACK lets more go (RFC 9002 section 7.2).
func TestPackerInitialCongestionWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		st := tc.openUniStream()
		go st.Write(make([]byte, 60000)) // blocks until acknowledged
		sizes := map[int]int{}
		for _, f := range tc.readFrames() {
			sizes[f.dgram] = f.size
		}
		inFlight := 0
		for _, n := range sizes {
			inFlight += n
		}
		if inFlight == 0 || inFlight > 14720 {
			t.Fatalf("%d bytes sent before an acknowledgment, want at most 14720", inFlight)
		}
		tc.writeAck(spaceApp)
		tc.advance(testRTT) // pacing may space the next packets
		tc.findFrame("an ACK opens the window", wire.FrameTypeStream)
		st.CancelWrite(0)
	})
}

// TestPackerSendsDatagramFrames: with the extension negotiated,
// SendDatagram goes out as a DATAGRAM frame (RFC 9221 section 5).
func TestPackerSendsDatagramFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide, func(c *Config, p *wire.TransportParameters) {
			c.EnableDatagrams = true
			p.MaxDatagramFrameSize = 1200
		})
		if err := tc.conn.SendDatagram([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		tc.wantFrame("SendDatagram", wire.Frame{Type: wire.FrameTypeDatagram, Data: []byte("hello")})
	})
}

// TestPackerMaxStreamDataResentWhenLost: a lost MAX_STREAM_DATA is sent
// again (RFC 9000 section 13.3).
func TestPackerMaxStreamDataResentWhenLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFrames(spaceApp, streamFrame(2, 0, string(make([]byte, 1000)), false))
		readNow(t, tc.acceptUniStream(), 1000)
		first := tc.findFrame("window read", wire.FrameTypeMaxStreamData)
		tc.readFrames()
		tc.advanceToTimer() // the PTO: presumed lost
		again := tc.findFrame("MAX_STREAM_DATA lost", wire.FrameTypeMaxStreamData)
		if again.StreamID != 2 || again.Limit < first.Limit {
			t.Fatalf("resent MAX_STREAM_DATA %d for stream %d, want at least %d for stream 2", again.Limit, again.StreamID, first.Limit)
		}
	})
}
