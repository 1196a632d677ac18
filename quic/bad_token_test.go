package quic

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// readInvalidToken reads datagrams from c until one is an Initial that
// the server's keys for dcid open and that carries CONNECTION_CLOSE with
// INVALID_TOKEN; it fails the test if none comes.
func readInvalidToken(t *testing.T, c *net.UDPConn, dcid []byte) {
	t.Helper()
	_, opener, err := handshake.NewInitialKeys(dcid, handshake.Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	// A hang guard, not a timing assertion.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal("no INVALID_TOKEN close:", err)
		}
		var hdr wire.LongHeader
		if wire.ParseLongHeader(buf[:n], &hdr) != nil || hdr.Type != wire.PacketTypeInitial {
			continue
		}
		payload, _, err := opener.UnprotectPacket(buf[:hdr.PacketLen], hdr.PNOffset, -1)
		if err != nil {
			continue
		}
		var f wire.Frame
		if _, err := wire.ParseFrame(payload, &f); err == nil && f.Type == wire.FrameTypeConnectionClose && f.ErrorCode == uint64(InvalidToken) {
			return
		}
	}
}

// TestBadInitialsOpenNothing sends an AlwaysRetry server random, replayed
// and misbound tokens, truncated and undersized Initials. None may create
// a connection; bad retry tokens get INVALID_TOKEN; a real client is still
// served afterwards.
func TestBadInitialsOpenNothing(t *testing.T) {
	ctx := testCtx(t)
	tr, ln := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret})
	server := ln.Addr()
	c := listenUDP(t)
	replayer := listenUDP(t)
	r := rand.New(rand.NewPCG(1, 2))
	cid := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	send := func(conn *net.UDPConn, b []byte) {
		if _, err := conn.WriteTo(b, server); err != nil {
			t.Fatal(err)
		}
	}
	// Random tokens of every plausible length.
	for i := range 40 {
		send(c, buildClientInitial(t, cid(8), cid(8), cid(1+i*3), 1200))
	}
	kr := testutil.KeyRing(t, testTokenSecret)
	me := c.LocalAddr().(*net.UDPAddr).AddrPort()
	odcid, rscid := cid(8), cid(8)
	retryTok, err := kr.Mint(nil, token.MintParams{
		Source: token.SourceHost, Type: token.TypeRetry, TimeMs: time.Now().UnixMilli(),
		Client: me, ODCID: odcid, RSCID: rscid,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Replayed from another port (port_mismatch), then with another DCID
	// than the token's RSCID (rscid_mismatch): both INVALID_TOKEN.
	send(replayer, buildClientInitial(t, rscid, cid(8), retryTok, 1200))
	readInvalidToken(t, replayer, rscid)
	otherDCID := cid(8)
	send(c, buildClientInitial(t, otherDCID, cid(8), retryTok, 1200))
	readInvalidToken(t, c, otherDCID)
	// A retry token for another client address.
	elsewhere, err := kr.Mint(nil, token.MintParams{
		Source: token.SourceAgent, Type: token.TypeRetry, TimeMs: time.Now().UnixMilli(),
		Client: netip.MustParseAddrPort("192.0.2.10:4433"), ODCID: odcid, RSCID: rscid,
	})
	if err != nil {
		t.Fatal(err)
	}
	send(c, buildClientInitial(t, rscid, cid(8), elsewhere, 1200))
	// A valid new_token token, but in Initials that are truncated or
	// under 1200 bytes (RFC 9000 section 14.1).
	nt, err := kr.Mint(nil, token.MintParams{Source: token.SourceHost, Type: token.TypeNewToken, TimeMs: time.Now().UnixMilli(), Client: me})
	if err != nil {
		t.Fatal(err)
	}
	full := buildClientInitial(t, cid(8), cid(8), nt, 1400)
	for _, n := range []int{1399, 1300, 1250, 1200, 600, 40, 7} {
		send(c, full[:n])
	}
	send(c, buildClientInitial(t, cid(8), cid(8), nt, 1100))
	// Everything right but the size: it would open a connection at 1200.
	send(c, buildClientInitial(t, rscid, cid(8), retryTok, 1199))

	dialEcho(t, ctx, nil, server, nil)
	if n := serverConns(ln); n > 1 {
		t.Fatalf("%d connections exist, want at most the real client's", n)
	}
	st := tr.AddressValidationStats()
	if st.InvalidTokenCloses < 2 || st.TokensRejected["host/port_mismatch"] != 1 || st.TokensRejected["host/rscid_mismatch"] != 1 || st.TokensRejected["agent/addr_mismatch"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The two Initials under 1200 bytes are counted as such; the truncated
	// ones as malformed or too small.
	if ts := tr.Stats(); ts.DatagramsDropped[DropInitialTooSmall.String()] < 2 || ts.DatagramsDropped[DropMalformed.String()] == 0 {
		t.Fatalf("drops %v", ts.DatagramsDropped)
	}
}

// isInvalidTokenClose reports whether datagram b is a server Initial that
// the Initial keys of dcid open and that carries CONNECTION_CLOSE with
// INVALID_TOKEN.
func isInvalidTokenClose(t *testing.T, b, dcid []byte) bool {
	t.Helper()
	_, opener, err := handshake.NewInitialKeys(dcid, handshake.Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	var hdr wire.LongHeader
	if wire.ParseLongHeader(b, &hdr) != nil || hdr.Type != wire.PacketTypeInitial {
		return false
	}
	payload, _, err := opener.UnprotectPacket(b[:hdr.PacketLen], hdr.PNOffset, -1)
	if err != nil {
		return false
	}
	var f wire.Frame
	_, err = wire.ParseFrame(payload, &f)
	return err == nil && f.Type == wire.FrameTypeConnectionClose && f.ErrorCode == uint64(InvalidToken)
}

// TestUndecryptableInitialWithRetryTokenGetsNoClose: a client Initial
// whose token reads as a retry token but fails validation gets a stateless
// INVALID_TOKEN close only if the packet decrypts (RFC 9000 section 8.1.3:
// "otherwise valid"). A bit flipped on the way can make a token-less
// Initial read as one with a token (the token length taken from another
// byte); a close for it was an extra server Initial with a new SCID, which
// the interop runner's handshakecorruption counts as a second handshake
// (TestLossyHandshakesStress, seed 308, 1 run in about 300), and which
// would end the handshake of a client that got it under its own
// connection IDs.
func TestUndecryptableInitialWithRetryTokenGetsNoClose(t *testing.T) {
	simTest(t, simnet.LinkConfig{Delay: 10 * time.Millisecond}, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		// Bits 7-6 of a token's first byte name its source (01, this
		// host), bits 5-4 its type (01, retry); the rest is garbage that
		// no key validates.
		badToken := make([]byte, 60)
		for i := range badToken {
			badToken[i] = byte(7 * i)
		}
		badToken[0] = 0x50
		// answers sends the Initial that build makes from dcid to the
		// server from client number from, and returns what came back
		// within a virtual second.
		answers := func(from int, dcid []byte, corrupt bool) [][]byte {
			c := s.socket(simClientAddr(from))
			pkt := buildClientInitial(t, dcid, []byte{1, 2, 3, 4}, badToken, 1200)
			if corrupt {
				pkt[len(pkt)-1] ^= 0x20 // in the AEAD tag
			}
			if _, err := c.WriteTo(pkt, srv.addr); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			for {
				buf := make([]byte, 2048)
				n, _, err := c.ReadFrom(buf)
				if err != nil {
					return got
				}
				got = append(got, buf[:n])
			}
		}
		// The same Initial intact: the close comes, as the RFC says.
		validDCID := []byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}
		got := answers(1, validDCID, false)
		if len(got) != 1 || !isInvalidTokenClose(t, got[0], validDCID) {
			t.Fatalf("the decryptable Initial got %d datagrams back, want one INVALID_TOKEN close", len(got))
		}
		corruptDCID := []byte{0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8}
		if got := answers(2, corruptDCID, true); len(got) != 0 {
			t.Errorf("the undecryptable Initial got %d datagrams back (INVALID_TOKEN close: %v), want none", len(got), isInvalidTokenClose(t, got[0], corruptDCID))
		}
		tr := srv.tr
		if st := tr.AddressValidationStats(); st.InvalidTokenCloses != 1 {
			t.Errorf("%d INVALID_TOKEN closes counted, want 1", st.InvalidTokenCloses)
		}
		if n := tr.Stats().Refused[RefusedUndecryptable.String()]; n != 1 {
			t.Errorf("%d undecryptable Initials counted, want 1", n)
		}
	})
}
