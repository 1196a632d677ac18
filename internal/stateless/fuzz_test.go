package stateless

import (
	"bytes"
	"slices"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// FuzzExamine feeds arbitrary datagrams to Examine and answers what it
// passes as an Initial with a Retry and a close. Nothing may panic or
// modify the datagram; a Version Negotiation reply parses and swaps the
// invariant header's CIDs; an Initial is a v1/v2 Initial of at least 1200
// bytes, and its Retry verifies for its DCID.
func FuzzExamine(f *testing.F) {
	f.Add(initialDatagram(f, wire.Version1, rfcODCID, cscid, nil, 1200))
	f.Add(initialDatagram(f, wire.Version2, rfcODCID, nil, []byte("token"), 1252))
	f.Add(initialDatagram(f, wire.Version1, rfcODCID[:4], cscid, []byte("tok"), 1200))
	f.Add(initialDatagram(f, wire.Version1, rfcODCID, cscid, nil, 1199))
	f.Add(longDatagram(f, wire.PacketTypeHandshake, wire.Version1, rfcODCID, cscid, nil, 1200))
	f.Add(unknownVersionDatagram(0x1a2a3a4a, bytes.Repeat([]byte{1}, 255), cscid, 1200))
	f.Add(unknownVersionDatagram(0, rfcODCID, cscid, 1200))
	f.Add([]byte{0x40, 1, 2, 3})
	f.Add([]byte{})
	r := mustNew(f)
	out := make([]byte, 0, MaxReplyLen)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		orig := bytes.Clone(pkt)
		var h wire.LongHeader
		o, reply := r.Examine(pkt, &h, out[:0])
		if !bytes.Equal(pkt, orig) {
			t.Fatal("Examine modified the datagram")
		}
		switch o {
		case VersionNegotiation:
			var inv wire.InvariantHeader
			if err := wire.ParseInvariantHeader(pkt, &inv); err != nil || r.Supports(inv.Version) || inv.Version == 0 || len(pkt) < MinDatagramSize {
				t.Fatalf("VN for %v in %d bytes (%v)", inv.Version, len(pkt), err)
			}
			d, s, vs, err := wire.ParseVersionNegotiation(reply, nil)
			if err != nil || !bytes.Equal(d, inv.SrcConnID) || !bytes.Equal(s, inv.DestConnID) {
				t.Fatalf("VN reply: %v", err)
			}
			if !slices.Equal(vs[:len(vs)-1], r.Versions(nil)) || !vs[len(vs)-1].IsReserved() {
				t.Fatalf("VN lists %v", vs)
			}
		case Initial:
			if h.Type != wire.PacketTypeInitial || !r.Supports(h.Version) || len(pkt) < MinDatagramSize ||
				(len(h.Token) == 0 && len(h.DestConnID) < MinClientDCIDLen) {
				t.Fatalf("Initial %+v in %d bytes", h, len(pkt))
			}
			retry, err := r.AppendRetry(out[:0], &h, rfcSCID, []byte("token"))
			if err == nil {
				if err := handshake.VerifyRetryIntegrityTag(retry, h.Version, h.DestConnID); err != nil {
					t.Fatalf("Retry tag: %v", err)
				}
			} else if len(h.DestConnID) >= MinClientDCIDLen && !bytes.Equal(h.DestConnID, rfcSCID) {
				t.Fatalf("no Retry for %+v: %v", h, err)
			}
			if _, err := r.AppendClose(out[:0], &h, &qerr.TransportError{Code: qerr.InvalidToken}); err != nil {
				t.Fatalf("close: %v", err)
			}
		default:
			if reply != nil {
				t.Fatalf("%v with a reply", o)
			}
		}
	})
}
