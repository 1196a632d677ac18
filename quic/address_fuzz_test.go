package quic

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// FuzzAddressValidation feeds arbitrary tokens and connection IDs to the
// host validator. It must never panic, and it may accept a retry token as
// validated only with the Initial's DCID as RSCID.
func FuzzAddressValidation(f *testing.F) {
	kr := testutil.KeyRing(f, testTokenSecret)
	client := netip.MustParseAddrPort("192.0.2.10:54321")
	rscid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	now := time.Now().UnixMilli()
	for _, p := range []token.MintParams{
		{Source: token.SourceAgent, Type: token.TypeRetry, TimeMs: now, Client: client, ODCID: bytes.Repeat([]byte{9}, 8), RSCID: rscid},
		{Source: token.SourceHost, Type: token.TypeNewToken, TimeMs: now, Client: client},
	} {
		tok, err := kr.Mint(nil, p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok, rscid)
	}
	f.Add([]byte{}, []byte{})
	f.Add([]byte("not a token"), []byte{1})
	v := hostValidatorForTest(f, AlwaysRetry()) // a Retry needs the Transport's ID generator
	remote := net.UDPAddrFromAddrPort(client)
	f.Fuzz(func(t *testing.T, tok, dcid []byte) {
		if len(dcid) > wire.MaxConnIDLen {
			dcid = dcid[:wire.MaxConnIDLen]
		}
		hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: dcid, SrcConnID: []byte{7}, Token: tok}
		dec := v.decide(&hdr, addrPortOf(remote), nil, new(retryRoom))
		switch dec.action {
		case initialAccept:
			if !dec.validated {
				t.Fatal("AlwaysRetry accepted without a valid token")
			}
			if dec.rscid != nil && !bytes.Equal(dec.rscid, dcid) {
				t.Fatalf("RSCID %x accepted for DCID %x", dec.rscid, dcid)
			}
		case initialRetry:
			if len(dec.retryToken) == 0 || len(dec.retrySCID) == 0 {
				t.Fatal("Retry without token or SCID")
			}
		}
	})
}
