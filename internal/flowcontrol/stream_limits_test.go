package flowcontrol

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

func TestIncomingStreamLimit(t *testing.T) {
	var s IncomingStreams
	s.Init(4)
	first, n, err := s.Open(2) // opens 0, 1 and 2
	if err != nil || first != 0 || n != 3 || s.Opened() != 3 {
		t.Fatalf("Open(2) = %d, %d, %v", first, n, err)
	}
	if _, n, err = s.Open(1); err != nil || n != 0 {
		t.Fatalf("reopening an existing stream: n %d, err %v", n, err)
	}
	if _, _, err = s.Open(4); code(err) != StreamLimitError || !errors.Is(err, ErrStreamLimit) {
		t.Fatalf("stream number 4 with limit 4: err = %v", err)
	}
	if s.Opened() != 3 {
		t.Fatal("a rejected open changed the state")
	}
	if first, n, err = s.Open(3); err != nil || first != 3 || n != 1 {
		t.Fatalf("Open(3) = %d, %d, %v", first, n, err)
	}
}

func TestMaxStreamsUpdates(t *testing.T) {
	var s IncomingStreams
	s.Init(4)
	if _, _, err := s.Open(3); err != nil {
		t.Fatal(err)
	}
	mustNil(t, s.Close())
	if s.NeedsUpdate() {
		t.Fatal("MAX_STREAMS after one close with a target of 4 (batch of 2)")
	}
	mustNil(t, s.Close())
	limit, ok := s.MaybeUpdate()
	if !ok || limit != 6 || s.Limit() != 6 {
		t.Fatalf("MaybeUpdate = %d, %v; want 6 (2 closed + 4)", limit, ok)
	}
	if _, ok = s.MaybeUpdate(); ok {
		t.Fatal("update repeated with nothing new closed")
	}
	if _, _, err := s.Open(5); err != nil {
		t.Fatalf("stream 5 under the raised limit: %v", err)
	}
	for i := 0; i < 4; i++ {
		mustNil(t, s.Close())
	}
	if err := s.Close(); !errors.Is(err, ErrNoOpenStreams) {
		t.Fatalf("closing more than opened: %v", err)
	}
	if limit, ok = s.MaybeUpdate(); !ok || limit != 10 {
		t.Fatalf("MaybeUpdate = %d, %v; want 10", limit, ok)
	}
	// A target of one stream updates on every close.
	var one IncomingStreams
	one.Init(1)
	if _, _, err := one.Open(0); err != nil {
		t.Fatal(err)
	}
	mustNil(t, one.Close())
	if limit, ok = one.MaybeUpdate(); !ok || limit != 2 {
		t.Fatalf("target 1: MaybeUpdate = %d, %v", limit, ok)
	}
	// The limit never passes 2^60.
	var huge IncomingStreams
	huge.Init(1 << 62)
	if huge.Limit() != MaxStreamCount {
		t.Fatalf("initial limit not capped: %d", huge.Limit())
	}
}

func TestOutgoingStreams(t *testing.T) {
	var o OutgoingStreams
	if err := o.Init(MaxStreamCount + 1); code(err) != TransportParameterError {
		t.Fatalf("initial_max_streams 2^60+1: err = %v", err)
	}
	mustNil(t, o.Init(2))
	for want := uint64(0); want < 2; want++ {
		if num, err := o.Open(); err != nil || num != want {
			t.Fatalf("Open = %d, %v; want %d", num, err, want)
		}
	}
	if _, err := o.Open(); !errors.Is(err, ErrStreamsBlocked) {
		t.Fatalf("open beyond the limit: err = %v", err)
	}
	if limit, send := o.Blocked(); !send || limit != 2 {
		t.Fatalf("STREAMS_BLOCKED = %d, %v", limit, send)
	}
	if _, send := o.Blocked(); send {
		t.Fatal("STREAMS_BLOCKED repeated for the same limit")
	}
	if up, err := o.OnMaxStreams(1); up || err != nil || o.Limit() != 2 {
		t.Fatal("a smaller MAX_STREAMS must be ignored")
	}
	if _, err := o.OnMaxStreams(MaxStreamCount + 1); code(err) != FrameEncodingError {
		t.Fatalf("MAX_STREAMS 2^60+1: err = %v", err)
	}
	if up, err := o.OnMaxStreams(MaxStreamCount); !up || err != nil || o.Available() != MaxStreamCount-2 {
		t.Fatalf("MAX_STREAMS 2^60: %v, %v, available %d", up, err, o.Available())
	}
	if _, send := o.Blocked(); send {
		t.Fatal("blocked with streams available")
	}
}

// TestServerUniLimitExample reproduces RFC 9000 section 19.11: a server that
// receives a unidirectional stream limit of 3 may open streams 3, 7 and 11,
// but not 15.
func TestServerUniLimitExample(t *testing.T) {
	var c StreamCounts
	c.Init(protocol.PerspectiveServer, 0, 0)
	mustNil(t, c.SetPeerLimits(0, 3))
	for _, want := range []uint64{3, 7, 11} {
		if id, err := c.OpenStream(Uni); err != nil || id != want {
			t.Fatalf("OpenStream = %d, %v; want %d", id, err, want)
		}
	}
	if _, err := c.OpenStream(Uni); !errors.Is(err, ErrStreamsBlocked) {
		t.Fatalf("stream 15: err = %v", err)
	}
	if _, err := c.OpenStream(Bidi); !errors.Is(err, ErrStreamsBlocked) {
		t.Fatalf("bidi with limit 0: err = %v", err)
	}
	// And the client side of the same example: stream 15 from the server is
	// a STREAM_LIMIT_ERROR.
	var cl StreamCounts
	cl.Init(protocol.PerspectiveClient, 0, 3)
	for _, id := range []uint64{3, 7, 11} {
		if _, _, err := cl.OnPeerFrame(id, true); err != nil {
			t.Fatalf("stream %d: %v", id, err)
		}
	}
	if _, _, err := cl.OnPeerFrame(15, true); code(err) != StreamLimitError {
		t.Fatalf("stream 15: err = %v", err)
	}
}

func TestOnPeerFrame(t *testing.T) {
	var c StreamCounts
	c.Init(protocol.PerspectiveServer, 10, 10)
	if err := c.SetPeerLimits(5, MaxStreamCount+1); code(err) != TransportParameterError {
		t.Fatalf("peer uni limit 2^60+1: err = %v", err)
	}
	mustNil(t, c.SetPeerLimits(5, 5))
	// protocol.PerspectiveClient bidi stream 8 (number 2) opens numbers 0..2.
	if first, n, err := c.OnPeerFrame(8, true); err != nil || first != 0 || n != 3 {
		t.Fatalf("stream 8: %d, %d, %v", first, n, err)
	}
	if c.Incoming(Bidi).Opened() != 3 || c.Incoming(Uni).Opened() != 0 {
		t.Fatal("the open went to the wrong direction")
	}
	// MAX_STREAM_DATA on a not yet opened client bidi stream opens it.
	if first, n, err := c.OnPeerFrame(12, false); err != nil || first != 3 || n != 1 {
		t.Fatalf("MAX_STREAM_DATA on stream 12: %d, %d, %v", first, n, err)
	}
	stateErrors := []struct {
		id        uint64
		peerSends bool
		why       string
	}{
		{1, true, "our bidi stream 1, never opened"},
		{1, false, "MAX_STREAM_DATA on our unopened bidi stream 1"},
		{3, false, "STOP_SENDING on our unopened uni stream 3"},
		{3, true, "STREAM on our send-only uni stream 3"},
		{2, false, "MAX_STREAM_DATA on the peer's uni stream 2, receive-only for us"},
	}
	for _, e := range stateErrors {
		if _, _, err := c.OnPeerFrame(e.id, e.peerSends); code(err) != StreamStateError || !errors.Is(err, ErrStreamState) {
			t.Errorf("%s: err = %v", e.why, err)
		}
	}
	id, err := c.OpenStream(Bidi)
	if err != nil || id != 1 {
		t.Fatalf("OpenStream = %d, %v", id, err)
	}
	if _, n, err := c.OnPeerFrame(1, true); err != nil || n != 0 {
		t.Fatalf("frame on our opened stream 1: n %d, err %v", n, err)
	}
	if _, _, err := c.OnPeerFrame(5, true); code(err) != StreamStateError {
		t.Fatalf("our next bidi stream 5, not yet opened: err = %v", err)
	}
	if _, _, err := c.OnPeerFrame(4*10, true); code(err) != StreamLimitError {
		t.Fatalf("client bidi number 10 with limit 10: err = %v", err)
	}
	if _, _, err := c.OnPeerFrame(MaxStreamID+1, true); code(err) != FrameEncodingError {
		t.Fatalf("stream ID 2^62: err = %v", err)
	}
	if c.Outgoing(Uni).Limit() != 5 || c.Incoming(Uni).Limit() != 10 {
		t.Fatal("accessors")
	}
}
