package stateless

import (
	"testing"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

func BenchmarkExamineInitial(b *testing.B) {
	r := mustNew(b)
	pkt := initialDatagram(b, wire.Version1, rfcODCID, cscid, nil, 1200)
	var h wire.LongHeader
	b.ReportAllocs()
	for b.Loop() {
		r.Examine(pkt, &h, nil)
	}
}

func BenchmarkVersionNegotiation(b *testing.B) {
	r := mustNew(b)
	pkt := unknownVersionDatagram(0x1a2a3a4a, rfcODCID, cscid, 1200)
	out := make([]byte, 0, MaxReplyLen)
	var h wire.LongHeader
	b.ReportAllocs()
	for b.Loop() {
		r.Examine(pkt, &h, out[:0])
	}
}

// BenchmarkRetry is the Retry packet and its integrity tag around a token
// of the universal token's retry size (the token's own cost is the token
// package's BenchmarkIssueAmortized).
func BenchmarkRetry(b *testing.B) {
	r := mustNew(b)
	h := examineInitial(b, r, initialDatagram(b, wire.Version1, rfcODCID, cscid, nil, 1200))
	tok := make([]byte, 82)
	out := make([]byte, 0, MaxReplyLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.AppendRetry(out[:0], h, rfcSCID, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClose(b *testing.B) {
	r := mustNew(b)
	h := examineInitial(b, r, initialDatagram(b, wire.Version1, rfcODCID, cscid, nil, 1200))
	out := make([]byte, 0, MaxReplyLen)
	e := &qerr.TransportError{Code: qerr.InvalidToken}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.AppendClose(out[:0], h, e); err != nil {
			b.Fatal(err)
		}
	}
}
