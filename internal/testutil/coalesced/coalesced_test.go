package coalesced

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

func TestCoalesced(t *testing.T) {
	mk := func(pt wire.PacketType, n int) []byte {
		h := wire.LongHeader{Type: pt, Version: wire.Version2, DestConnID: []byte{1, 2, 3, 4}, Length: uint64(n)}
		return append(wire.AppendLongHeader(nil, &h, 1, 2), bytes.Repeat([]byte{byte(pt)}, n)...)
	}
	initial, hs := mk(wire.PacketTypeInitial, 40), mk(wire.PacketTypeHandshake, 30)
	short := append(wire.AppendShortHeader(nil, []byte{1, 2, 3, 4}, 1, false, false), 1, 2, 3)
	dgram := append(append(append([]byte{}, initial...), hs...), short...)
	var got [][]byte
	for pkt, err := range Packets(dgram) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pkt)
	}
	if len(got) != 3 || !bytes.Equal(got[0], initial) || !bytes.Equal(got[1], hs) || !bytes.Equal(got[2], short) {
		t.Fatalf("split into %d packets: %x", len(got), got)
	}
	// A broken second packet: the first one is still returned.
	broken := append(append([]byte{}, initial...), hs[:20]...)
	pkt, rest, err := Split(broken)
	if err != nil || !bytes.Equal(pkt, initial) {
		t.Fatalf("first packet: %v", err)
	}
	if _, _, err := Split(rest); !errors.Is(err, wire.ErrLengthBeyondPacket) {
		t.Errorf("second packet err = %v", err)
	}
	// An unknown version takes the whole datagram.
	unknown := []byte{0xc0, 0, 0, 0, 9, 0, 0, 1, 2, 3}
	if pkt, rest, err := Split(unknown); err != nil || len(pkt) != len(unknown) || len(rest) != 0 {
		t.Errorf("unknown version: %x %x %v", pkt, rest, err)
	}
}
