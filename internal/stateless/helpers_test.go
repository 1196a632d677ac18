package stateless

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// The client connection IDs of RFC 9001 appendix A.
var (
	rfcODCID = unhex("8394c8f03e515708")
	rfcSCID  = unhex("f067a5502a4262b5") // the Retry's SCID in appendix A.4
	cscid    = []byte{0xc5, 0xc1, 0xd0}
)

// unhex decodes hex with whitespace; it panics on bad test data.
func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// initialDatagram is a datagram of size bytes holding one client Initial of
// version v with the given connection IDs and token (its payload zeros:
// Examine reads headers only).
func initialDatagram(t testing.TB, v wire.Version, dcid, scid, tok []byte, size int) []byte {
	t.Helper()
	return longDatagram(t, wire.PacketTypeInitial, v, dcid, scid, tok, size)
}

func longDatagram(t testing.TB, typ wire.PacketType, v wire.Version, dcid, scid, tok []byte, size int) []byte {
	t.Helper()
	h := wire.LongHeader{Type: typ, Version: v, DestConnID: dcid, SrcConnID: scid, Token: tok}
	b := wire.AppendLongHeader(nil, &h, 4, 2)
	if len(b) > size-4 {
		t.Fatalf("header of %d bytes does not fit %d", len(b), size)
	}
	wire.PutVarintWithLen(b[len(b)-2:], uint64(size-len(b)), 2)
	return append(b, make([]byte, size-len(b))...)
}

// unknownVersionDatagram is a long header of version v with connection IDs
// of any length up to 255, padded to size bytes.
func unknownVersionDatagram(v uint32, dcid, scid []byte, size int) []byte {
	b := []byte{0xc0, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), byte(len(dcid))}
	b = append(append(b, dcid...), byte(len(scid)))
	b = append(b, scid...)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

func mustNew(t testing.TB, vs ...wire.Version) *Responder {
	t.Helper()
	r, err := New(vs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// examineInitial parses an Initial datagram through Examine.
func examineInitial(t testing.TB, r *Responder, pkt []byte) *wire.LongHeader {
	t.Helper()
	var h wire.LongHeader
	if o, _ := r.Examine(pkt, &h, nil); o != Initial {
		t.Fatalf("Examine: %v, want initial", o)
	}
	return &h
}
