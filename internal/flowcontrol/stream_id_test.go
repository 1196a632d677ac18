package flowcontrol

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

// TestStreamIDTypes reproduces Table 1 of RFC 9000 section 2.1.
func TestStreamIDTypes(t *testing.T) {
	cases := []struct {
		id   uint64
		init protocol.Perspective
		dir  Direction
	}{
		{0x00, protocol.PerspectiveClient, Bidi},
		{0x01, protocol.PerspectiveServer, Bidi},
		{0x02, protocol.PerspectiveClient, Uni},
		{0x03, protocol.PerspectiveServer, Uni},
	}
	for _, c := range cases {
		if Initiator(c.id) != c.init || DirectionOf(c.id) != c.dir {
			t.Errorf("stream 0x%x: got %v/%v", c.id, Initiator(c.id), DirectionOf(c.id))
		}
		for n := uint64(0); n < 4; n++ {
			id, err := NthStreamID(n, c.init, c.dir)
			if err != nil || id != c.id+4*n || StreamNum(id) != n {
				t.Errorf("NthStreamID(%d, %v, %v) = %d, %v", n, c.init, c.dir, id, err)
			}
		}
	}
	if id, err := NthStreamID(MaxStreamCount-1, protocol.PerspectiveServer, Uni); err != nil || id != MaxStreamID {
		t.Fatalf("last stream: %d, %v; want 2^62-1", id, err)
	}
	if _, err := NthStreamID(MaxStreamCount, protocol.PerspectiveClient, Bidi); !errors.Is(err, ErrStreamNumTooBig) {
		t.Fatalf("stream number 2^60: err = %v", err)
	}
}

func TestStreamDirectionality(t *testing.T) {
	// As a server: client bidi 0, server bidi 1, client uni 2, server uni 3.
	send := map[uint64]bool{0: true, 1: true, 2: false, 3: true}
	recv := map[uint64]bool{0: true, 1: true, 2: true, 3: false}
	for id := uint64(0); id < 4; id++ {
		if LocalCanSend(id, protocol.PerspectiveServer) != send[id] || LocalCanReceive(id, protocol.PerspectiveServer) != recv[id] {
			t.Errorf("stream %d as server: send %v recv %v", id, LocalCanSend(id, protocol.PerspectiveServer), LocalCanReceive(id, protocol.PerspectiveServer))
		}
	}
}
