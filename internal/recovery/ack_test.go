package recovery

import (
	"errors"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// initialCwnd is the initial window of the controllers under test.
var initialCwnd = congestion.InitialWindow(congestion.DefaultMaxDatagramSize)

func TestAckSimplePathNoLoss(t *testing.T) {
	r := confirmedServer()
	now := t0
	pn := uint64(0)
	for round := range 5 {
		// One window per round trip, all acknowledged in order.
		sent := now
		first := pn
		for r.CanSend() {
			send(t, r, protocol.SpaceAppData, pn, sent)
			pn++
		}
		now = now.Add(ms(50))
		ev := ack(t, r, protocol.SpaceAppData, now, 0, rng(0, pn-1))
		if len(ev.Lost) != 0 || uint64(len(ev.Acked)) != pn-first {
			t.Fatalf("round %d: %d acked, %d lost; want %d, 0", round, len(ev.Acked), len(ev.Lost), pn-first)
		}
		if r.BytesInFlight() != 0 || !r.LossDetectionTimeout().IsZero() {
			t.Fatalf("round %d: %d bytes in flight, timer %v", round, r.BytesInFlight(), r.LossDetectionTimeout())
		}
	}
	// Slow start grew the window by every datagram acked: each round sent
	// whole datagrams until the window was full.
	want := initialCwnd
	for range 5 {
		want += (want + 1199) / 1200 * 1200
	}
	if got := r.Controller().CongestionWindow(); got != want {
		t.Fatalf("cwnd %d, want %d", got, want)
	}
	if r.RTT().SmoothedRTT() != ms(50) {
		t.Fatalf("smoothed RTT %v", r.RTT().SmoothedRTT())
	}
	if la, ok := r.LargestAcked(protocol.SpaceAppData); !ok || la != pn-1 {
		t.Fatalf("largest acked %d %v", la, ok)
	}
}

func TestAckDuplicateNotCountedTwice(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(10) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(30)), 0, rng(0, 4))
	if !equalNumbers(ev.Acked, 0, 1, 2, 3, 4) {
		t.Fatalf("acked %v", numbers(ev.Acked))
	}
	cwnd, inFlight, srtt := r.Controller().CongestionWindow(), r.BytesInFlight(), r.RTT().SmoothedRTT()
	ev = ack(t, r, protocol.SpaceAppData, t0.Add(ms(90)), 0, rng(0, 4))
	if len(ev.Acked) != 0 || len(ev.Lost) != 0 {
		t.Fatalf("duplicate ACK reported %v acked %v lost", numbers(ev.Acked), numbers(ev.Lost))
	}
	if r.Controller().CongestionWindow() != cwnd || r.BytesInFlight() != inFlight || r.RTT().SmoothedRTT() != srtt {
		t.Fatal("duplicate ACK changed the window, bytes in flight or RTT")
	}
	// Overlapping ACK: only 5..6 are new.
	ev = ack(t, r, protocol.SpaceAppData, t0.Add(ms(95)), 0, rng(3, 6))
	if !equalNumbers(ev.Acked, 5, 6) {
		t.Fatalf("acked %v, want 5 6", numbers(ev.Acked))
	}
	if r.BytesInFlight() != 3*1200 {
		t.Fatalf("bytes in flight %d", r.BytesInFlight())
	}
}

func TestAckMultipleRangesLargestFirst(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(12) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(10)), 0, rng(10, 11), rng(6, 7), rng(1, 2))
	if !equalNumbers(ev.Acked, 10, 11, 6, 7, 1, 2) {
		t.Fatalf("acked %v", numbers(ev.Acked))
	}
	// Packet threshold: 0, 3, 4, 5 are 3 or more below 11; 8 is and 9
	// is not.
	if !equalNumbers(ev.Lost, 0, 3, 4, 5, 8) {
		t.Fatalf("lost %v", numbers(ev.Lost))
	}
	for _, p := range ev.Acked {
		if p.Handle != p.Number || p.Size != 1200 || !p.AckEliciting || !p.InFlight {
			t.Fatalf("acked packet fields not preserved: %+v", p)
		}
	}
}

func TestAckOfUnsentPacket(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(5) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	inFlight := r.BytesInFlight()
	var ev Events
	err := r.OnAckReceived(protocol.SpaceAppData, []wire.AckRange{rng(3, 5)}, 0, t0.Add(ms(10)), &ev)
	if !errors.Is(err, ErrUnsentPacketAcked) {
		t.Fatalf("ACK of packet 5: %v", err)
	}
	if code, ok := peerCode(err); !ok || code != qerr.ProtocolViolation {
		t.Fatalf("code %#x %v, want PROTOCOL_VIOLATION", code, ok)
	}
	if len(ev.Acked) != 0 || r.BytesInFlight() != inFlight || r.RTT().HasSample() {
		t.Fatal("a rejected ACK changed state")
	}
	if _, ok := r.LargestAcked(protocol.SpaceAppData); ok {
		t.Fatal("a rejected ACK set the largest acked")
	}
	// Nothing sent at all in a space.
	if err := r.OnAckReceived(protocol.SpaceHandshake, []wire.AckRange{rng(0, 0)}, 0, t0, nil); !errors.Is(err, ErrUnsentPacketAcked) {
		t.Fatalf("ACK in an unused space: %v", err)
	}
}

func TestAckOfSkippedPacketNumber(t *testing.T) {
	r := confirmedServer()
	// Skip 0 at the start and 4 in the middle.
	for _, pn := range []uint64{1, 2, 3, 5, 6, 7, 8, 9} {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	for _, bad := range [][]wire.AckRange{
		{rng(4, 4)},
		{rng(3, 5)},
		{rng(8, 9), rng(0, 2)},
	} {
		if err := r.OnAckReceived(protocol.SpaceAppData, bad, 0, t0.Add(ms(10)), nil); !errors.Is(err, ErrUnsentPacketAcked) {
			t.Fatalf("ACK %v of a skipped number: %v", bad, err)
		}
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(10)), 0, rng(5, 9), rng(1, 3))
	if len(ev.Acked) != 8 || r.BytesInFlight() != 0 {
		t.Fatalf("acked %v, in flight %d", numbers(ev.Acked), r.BytesInFlight())
	}
	// Every packet is resolved and dropped from the ring; the skipped
	// numbers are still remembered.
	if r.spaces[protocol.SpaceAppData].sent.len() != 0 {
		t.Fatalf("ring holds %d packets", r.spaces[protocol.SpaceAppData].sent.len())
	}
	if err := r.OnAckReceived(protocol.SpaceAppData, []wire.AckRange{rng(4, 4)}, 0, t0.Add(ms(20)), nil); !errors.Is(err, ErrUnsentPacketAcked) {
		t.Fatalf("late ACK of a skipped number: %v", err)
	}
	ev = ack(t, r, protocol.SpaceAppData, t0.Add(ms(20)), 0, rng(5, 9))
	if len(ev.Acked) != 0 {
		t.Fatal("ACK of forgotten packets reported them again")
	}
}

func TestAckOfSkippedNumberBeyondHistory(t *testing.T) {
	r := confirmedServer()
	// Twenty gaps: more than the skipped-range history keeps, so the
	// oldest ones are caught only because their neighbours are still
	// tracked.
	for pn := uint64(0); pn <= 40; pn += 2 {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	for _, gap := range []uint64{1, 3, 39} {
		if err := r.OnAckReceived(protocol.SpaceAppData, []wire.AckRange{rng(gap, gap)}, 0, t0, nil); !errors.Is(err, ErrUnsentPacketAcked) {
			t.Fatalf("ACK of skipped %d: %v", gap, err)
		}
	}
	ev := ack(t, r, protocol.SpaceAppData, t0.Add(ms(5)), 0, rng(40, 40), rng(0, 0))
	if !equalNumbers(ev.Acked, 40, 0) {
		t.Fatalf("acked %v", numbers(ev.Acked))
	}
}

func TestAckInvalidRanges(t *testing.T) {
	r := confirmedServer()
	for pn := range uint64(10) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	for _, bad := range [][]wire.AckRange{
		nil,
		{rng(5, 4)},
		{rng(1, 2), rng(5, 6)}, // ascending
		{rng(4, 8), rng(2, 4)}, // overlapping
	} {
		err := r.OnAckReceived(protocol.SpaceAppData, bad, 0, t0, nil)
		if !errors.Is(err, ErrInvalidAckRanges) {
			t.Fatalf("ranges %v: %v", bad, err)
		}
		if code, ok := peerCode(err); !ok || code != qerr.FrameEncodingError {
			t.Fatalf("ranges %v: code %#x", bad, code)
		}
	}
	if err := r.OnAckReceived(protocol.PacketNumberSpace(7), []wire.AckRange{rng(0, 0)}, 0, t0, nil); !errors.Is(err, ErrInvalidSpace) {
		t.Fatalf("invalid space: %v", err)
	}
	if _, ok := peerCode(ErrInvalidSpace); ok {
		t.Fatal("a caller bug mapped to a transport error")
	}
}

func TestOnPacketSentRejectsBadInput(t *testing.T) {
	r := confirmedServer()
	send(t, r, protocol.SpaceAppData, 5, t0)
	for _, tc := range []struct {
		p    SentPacket
		want error
	}{
		{SentPacket{Number: 5, TimeSent: t0}, ErrPacketNumberNotIncreasing},
		{SentPacket{Number: 4, TimeSent: t0}, ErrPacketNumberNotIncreasing},
		{SentPacket{Number: 6, TimeSent: t0, Size: -1}, ErrInvalidPacket},
		{SentPacket{Number: 1 << 62, TimeSent: t0}, ErrInvalidPacket},
	} {
		if err := r.OnPacketSent(protocol.SpaceAppData, tc.p); !errors.Is(err, tc.want) {
			t.Fatalf("%+v: %v, want %v", tc.p, err, tc.want)
		}
	}
	if err := r.OnPacketSent(protocol.NumSpaces, SentPacket{}); !errors.Is(err, ErrInvalidSpace) {
		t.Fatalf("invalid space: %v", err)
	}
	if r.BytesInFlight() != 1200 {
		t.Fatalf("rejected packets counted: %d", r.BytesInFlight())
	}
}

func TestRTTSampleRules(t *testing.T) {
	r := confirmedServer()
	send(t, r, protocol.SpaceAppData, 0, t0)
	send(t, r, protocol.SpaceAppData, 1, t0.Add(ms(10)))
	// An ACK-only packet: neither ack-eliciting nor in flight.
	if err := r.OnPacketSent(protocol.SpaceAppData, SentPacket{Number: 2, TimeSent: t0.Add(ms(20)), Size: 50}); err != nil {
		t.Fatal(err)
	}
	// The largest acked (2) is newly acked but nothing newly acked is
	// ack-eliciting: no sample.
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(100)), 0, rng(2, 2))
	if r.RTT().HasSample() {
		t.Fatal("sample from an ACK of only a non-ack-eliciting packet")
	}
	// The largest acked is not newly acked: no sample either.
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(110)), 0, rng(2, 2), rng(0, 0))
	if r.RTT().HasSample() {
		t.Fatal("sample when the largest acknowledged was not newly acked")
	}
	// Packet 3 newly acked and ack-eliciting: latest = 150 - 30.
	send(t, r, protocol.SpaceAppData, 3, t0.Add(ms(30)))
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(150)), ms(5), rng(1, 3))
	if r.RTT().LatestRTT() != ms(120) || r.RTT().SmoothedRTT() != ms(120) {
		t.Fatalf("latest %v smoothed %v, want 120ms", r.RTT().LatestRTT(), r.RTT().SmoothedRTT())
	}
}

// TestNoSampleFromPacketSentBeforeSampled: a packet sent before the one
// the last RTT sample came from gives no sample when it is acknowledged
// later, in whatever space (quic-go's rule): its acknowledgment waited, for
// the peer's keys (a server's first Handshake flight behind a lost
// Initial) or for the ACK, and would inflate the estimate.
func TestNoSampleFromPacketSentBeforeSampled(t *testing.T) {
	r := New(Config{IsServer: true})
	send(t, r, protocol.SpaceHandshake, 0, t0)            // the first flight, buffered by the peer
	send(t, r, protocol.SpaceInitial, 0, t0.Add(ms(300))) // the Initial resent on PTO
	ack(t, r, protocol.SpaceInitial, t0.Add(ms(320)), 0, rng(0, 0))
	if r.RTT().LatestRTT() != ms(20) {
		t.Fatalf("latest %v, want 20ms from the Initial", r.RTT().LatestRTT())
	}
	ack(t, r, protocol.SpaceHandshake, t0.Add(ms(330)), 0, rng(0, 0))
	if r.RTT().LatestRTT() != ms(20) || r.RTT().SmoothedRTT() != ms(20) {
		t.Fatalf("latest %v smoothed %v after the ACK of the older Handshake packet, want 20ms", r.RTT().LatestRTT(), r.RTT().SmoothedRTT())
	}
	// A packet sent later samples again.
	send(t, r, protocol.SpaceHandshake, 1, t0.Add(ms(340)))
	ack(t, r, protocol.SpaceHandshake, t0.Add(ms(370)), 0, rng(1, 1))
	if r.RTT().LatestRTT() != ms(30) {
		t.Fatalf("latest %v, want 30ms", r.RTT().LatestRTT())
	}
}

func TestAckDelayIgnoredInInitialSpace(t *testing.T) {
	for _, tc := range []struct {
		space protocol.PacketNumberSpace
		want  int // smoothed RTT in ms after the second sample
	}{
		// Second sample 150 ms with 40 ms delay: Initial ignores the
		// delay (smoothed = (700+150)/8), Handshake applies it uncapped
		// before confirmation ((700+110)/8).
		{protocol.SpaceInitial, 106250},
		{protocol.SpaceHandshake, 101250},
	} {
		r := New(Config{IsServer: true})
		send(t, r, tc.space, 0, t0)
		ack(t, r, tc.space, t0.Add(ms(100)), 0, rng(0, 0))
		send(t, r, tc.space, 1, t0.Add(ms(200)))
		ack(t, r, tc.space, t0.Add(ms(350)), ms(40), rng(1, 1))
		if got := r.RTT().SmoothedRTT().Microseconds(); got != int64(tc.want) {
			t.Fatalf("%v: smoothed %dus, want %dus", tc.space, got, tc.want)
		}
	}
}

// countingController records the calls Recovery makes.
type countingController struct {
	congestion.Controller
	acked, lostCalls, lostBytes, persistent int
}

func (c *countingController) OnPacketAcked(now, sent time.Time, bytes, prior int) {
	c.acked++
	c.Controller.OnPacketAcked(now, sent, bytes, prior)
}

func (c *countingController) OnPacketsLost(now, sent time.Time, bytes int) {
	c.lostCalls++
	c.lostBytes += bytes
	c.Controller.OnPacketsLost(now, sent, bytes)
}

func (c *countingController) OnPersistentCongestion(now time.Time) {
	c.persistent++
	c.Controller.OnPersistentCongestion(now)
}

func TestCongestionControllerDriven(t *testing.T) {
	cc := &countingController{}
	r := New(Config{IsServer: true, NewController: func(rtt congestion.RTTSource, mds int) congestion.Controller {
		cc.Controller = congestion.NewCubic(rtt, mds)
		return cc
	}})
	r.SetHandshakeConfirmed(t0)
	for pn := range uint64(8) {
		send(t, r, protocol.SpaceAppData, pn, t0)
	}
	// Non-in-flight packets never reach the controller.
	if err := r.OnPacketSent(protocol.SpaceAppData, SentPacket{Number: 8, TimeSent: t0, Size: 40}); err != nil {
		t.Fatal(err)
	}
	ack(t, r, protocol.SpaceAppData, t0.Add(ms(40)), 0, rng(4, 8))
	if cc.acked != 4 || cc.lostCalls != 1 || cc.lostBytes != 4*1200 || cc.persistent != 0 {
		t.Fatalf("controller saw %d acks, %d loss calls (%d bytes), %d persistent", cc.acked, cc.lostCalls, cc.lostBytes, cc.persistent)
	}
	if !r.Controller().InRecovery() {
		t.Fatal("loss did not start a recovery period")
	}
}

// peerCode returns the transport error code of a peer's error, the one
// shape every internal package reports them in.
func peerCode(err error) (qerr.TransportErrorCode, bool) {
	var te *qerr.TransportError
	if !errors.As(err, &te) {
		return 0, false
	}
	return te.Code, true
}
