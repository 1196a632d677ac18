package stateless

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// TestRetryRFCVectors: the Retry of RFC 9001 appendix A.4 (v1) and RFC 9369
// appendix A.4 (v2), byte for byte: the client Initial of appendix A.2
// (DCID 8394c8f03e515708, empty SCID) answered with SCID f067a5502a4262b5
// and the token "token".
func TestRetryRFCVectors(t *testing.T) {
	for _, vec := range []struct {
		v    wire.Version
		want string
	}{
		{wire.Version1, "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba"},
		{wire.Version2, "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6"},
	} {
		t.Run(vec.v.String(), func(t *testing.T) {
			r := mustNew(t)
			h := examineInitial(t, r, initialDatagram(t, vec.v, rfcODCID, nil, nil, 1200))
			got, err := r.AppendRetry(nil, h, rfcSCID, []byte("token"))
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(got) != vec.want {
				t.Fatalf("Retry\n got %x\nwant %s", got, vec.want)
			}
			// After other bytes in the buffer the Retry and its tag are the
			// same: the tag covers the Retry only.
			pre, err := r.AppendRetry([]byte("prefix"), h, rfcSCID, []byte("token"))
			if err != nil || !bytes.Equal(pre, append([]byte("prefix"), got...)) {
				t.Fatalf("with a prefix: %x, %v", pre, err)
			}
		})
	}
}

// TestRetryIssued: a Retry around a token from the token package, as both
// callers build it, read back as the client and the host cooperator do.
func TestRetryIssued(t *testing.T) {
	kr := testutil.KeyRing(t, bytes.Repeat([]byte{7}, token.SecretLen))
	iss, err := kr.NewIssuer(token.SourceAgent)
	if err != nil {
		t.Fatal(err)
	}
	val, err := kr.NewValidator(token.ValidatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	client := netip.MustParseAddrPort("192.0.2.10:54321")
	r := mustNew(t)
	for _, v := range []wire.Version{wire.Version1, wire.Version2} {
		dcid := bytes.Repeat([]byte{0xd1}, 20)
		h := examineInitial(t, r, initialDatagram(t, v, dcid, cscid, nil, 1200))
		scid := []byte{1, 2, 3, 4} // a server's 4-byte IDs
		now := time.Now()
		out := make([]byte, 0, MaxRetryLen)
		pkt, err := r.AppendIssuedRetry(out, h, scid, iss, client, now)
		if err != nil {
			t.Fatal(err)
		}
		if &pkt[0] != &out[:1][0] {
			t.Fatal("the Retry did not fit a MaxRetryLen buffer")
		}
		var rh wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &rh); err != nil || rh.Type != wire.PacketTypeRetry || rh.Version != v {
			t.Fatalf("%v: Retry parses as %v %v, %v", v, rh.Type, rh.Version, err)
		}
		if !bytes.Equal(rh.DestConnID, cscid) || !bytes.Equal(rh.SrcConnID, scid) {
			t.Fatalf("%v: Retry to %x from %x", v, rh.DestConnID, rh.SrcConnID)
		}
		if err := handshake.VerifyRetryIntegrityTag(pkt, v, dcid); err != nil {
			t.Fatalf("%v: tag: %v", v, err)
		}
		var buf [token.MaxPayloadLen]byte
		res, err := val.Validate(rh.Token, token.TypeRetry, client, now, buf[:0])
		if err != nil || !bytes.Equal(res.ODCID, dcid) || !bytes.Equal(res.RSCID, scid) || res.Client != client {
			t.Fatalf("%v: token: %v, ODCID %x RSCID %x", v, err, res.ODCID, res.RSCID)
		}
		// The same packet as AppendRetry around that token builds.
		same, err := r.AppendRetry(nil, h, scid, rh.Token)
		if err != nil || !bytes.Equal(same, pkt) {
			t.Fatalf("%v: AppendRetry around the issued token differs: %v", v, err)
		}
	}
	// An issuer failure (an address no token can bind) leaves the buffer.
	h := examineInitial(t, r, initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200))
	if b, err := r.AppendIssuedRetry([]byte("x"), h, rfcSCID, iss, netip.AddrPort{}, time.Now()); err == nil || string(b) != "x" {
		t.Fatalf("invalid client address: %q, %v", b, err)
	}
	if _, err := r.AppendIssuedRetry(nil, h, nil, iss, client, time.Now()); !errors.Is(err, ErrBadSCID) {
		t.Fatalf("empty SCID: %v", err)
	}
}

func TestRetryRefuses(t *testing.T) {
	r := mustNew(t, wire.Version1)
	h := examineInitial(t, r, initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200))
	other := *h
	other.Version = wire.Version2
	short := *h
	short.DestConnID = rfcODCID[:7]
	hs := *h
	hs.Type = wire.PacketTypeHandshake
	cases := []struct {
		name      string
		h         *wire.LongHeader
		scid, tok []byte
		want      error
	}{
		{"Handshake packet", &hs, rfcSCID, []byte("t"), ErrNotInitial},
		{"version not spoken", &other, rfcSCID, []byte("t"), ErrVersion},
		{"DCID of 7 bytes", &short, rfcSCID, []byte("t"), ErrDCIDTooShort},
		{"empty SCID", h, nil, []byte("t"), ErrBadSCID},
		{"SCID of 21 bytes", h, make([]byte, 21), []byte("t"), ErrBadSCID},
		{"SCID = the client's DCID", h, bytes.Clone(rfcODCID), []byte("t"), ErrBadSCID},
		{"empty token", h, rfcSCID, nil, ErrEmptyToken},
	}
	for _, tc := range cases {
		b, err := r.AppendRetry([]byte("x"), tc.h, tc.scid, tc.tok)
		if !errors.Is(err, tc.want) || string(b) != "x" {
			t.Errorf("%s: %q, %v; want %v and the buffer untouched", tc.name, b, err, tc.want)
		}
	}
}
