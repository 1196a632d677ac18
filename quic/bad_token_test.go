package quic

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	"github.com/turboretry/turboretry/internal/handshake"
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
