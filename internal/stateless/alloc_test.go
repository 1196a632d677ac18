package stateless

import (
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// TestAllocs: examining a datagram, Version Negotiation and a Retry do not
// allocate, so a flood cannot make the garbage collector work; a close
// allocates only its sealing keys.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	r := mustNew(t)
	initial := initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200)
	vn := unknownVersionDatagram(0x1a2a3a4a, rfcODCID, cscid, 1200)
	garbage := []byte{0xc0, 0, 0, 0, 1, 30}
	out := make([]byte, 0, MaxReplyLen)
	var h wire.LongHeader
	for name, pkt := range map[string][]byte{"Initial": initial, "VN": vn, "garbage": garbage} {
		if a := testing.AllocsPerRun(100, func() { r.Examine(pkt, &h, out[:0]) }); a != 0 {
			t.Errorf("Examine %s: %v allocations", name, a)
		}
	}
	r.Examine(initial, &h, nil)
	tok := make([]byte, 90)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := r.AppendRetry(out[:0], &h, rfcSCID, tok); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("AppendRetry: %v allocations", a)
	}
	kr := testutil.KeyRing(t, make([]byte, token.SecretLen))
	iss, err := kr.NewIssuer(token.SourceAgent)
	if err != nil {
		t.Fatal(err)
	}
	client := netip.MustParseAddrPort("192.0.2.1:443")
	now := time.Now()
	if a := testing.AllocsPerRun(100, func() {
		if _, err := r.AppendIssuedRetry(out[:0], &h, rfcSCID, iss, client, now); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("AppendIssuedRetry: %v allocations", a)
	}
	// A close derives the server's Initial sealing keys, only those: the
	// AES state of the AEAD and header protection keys, a GCM state, and
	// one struct; the client's direction would double it.
	e := &qerr.TransportError{Code: qerr.ConnectionRefused}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := r.AppendClose(out[:0], &h, e); err != nil {
			t.Fatal(err)
		}
	}); a > 4 {
		t.Errorf("AppendClose: %v allocations, want at most 4", a)
	}
}
