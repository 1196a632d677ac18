package flowcontrol

import (
	"errors"
	"testing"
)

// TestStreamIDTypes reproduces Table 1 of RFC 9000 section 2.1.
func TestStreamIDTypes(t *testing.T) {
	cases := []struct {
		id   uint64
		init Perspective
		dir  Direction
	}{
		{0x00, Client, Bidi},
		{0x01, Server, Bidi},
		{0x02, Client, Uni},
		{0x03, Server, Uni},
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
	if id, err := NthStreamID(MaxStreamCount-1, Server, Uni); err != nil || id != MaxStreamID {
		t.Fatalf("last stream: %d, %v; want 2^62-1", id, err)
	}
	if _, err := NthStreamID(MaxStreamCount, Client, Bidi); !errors.Is(err, ErrStreamNumTooBig) {
		t.Fatalf("stream number 2^60: err = %v", err)
	}
	if Client.Peer() != Server || Server.Peer() != Client {
		t.Fatal("Peer")
	}
}

func TestStreamDirectionality(t *testing.T) {
	// As a server: client bidi 0, server bidi 1, client uni 2, server uni 3.
	send := map[uint64]bool{0: true, 1: true, 2: false, 3: true}
	recv := map[uint64]bool{0: true, 1: true, 2: true, 3: false}
	for id := uint64(0); id < 4; id++ {
		if LocalCanSend(id, Server) != send[id] || LocalCanReceive(id, Server) != recv[id] {
			t.Errorf("stream %d as server: send %v recv %v", id, LocalCanSend(id, Server), LocalCanReceive(id, Server))
		}
	}
}
