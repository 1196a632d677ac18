package quic

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/token"
)

// rawLongHeader is a long header of version v with the given connection
// IDs, zero-padded to size bytes: enough for what is answered before any
// decryption.
func rawLongHeader(v uint32, dcid, scid []byte, size int) []byte {
	b := []byte{0xc0, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), byte(len(dcid))}
	b = append(append(b, dcid...), byte(len(scid)))
	b = append(b, scid...)
	return append(b, make([]byte, max(0, size-len(b)))...)
}

// handshakeHeader is an unprotected v1 Handshake packet to dcid, padded to
// size bytes.
func handshakeHeader(dcid []byte, size int) []byte {
	h := wire.LongHeader{Type: wire.PacketTypeHandshake, Version: wire.Version1, DestConnID: dcid, SrcConnID: []byte{9}}
	b := wire.AppendLongHeader(nil, &h, 1, 2)
	wire.PutVarintWithLen(b[len(b)-2:], uint64(size-len(b)), 2)
	return append(b, make([]byte, size-len(b))...)
}

// readVN reads datagrams from c until a Version Negotiation packet comes
// and returns its DCID and versions.
func readVN(t *testing.T, c *net.UDPConn) ([]byte, []wire.Version) {
	t.Helper()
	// A hang guard, not a timing assertion.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal("no Version Negotiation:", err)
	}
	dcid, _, vs, err := wire.ParseVersionNegotiation(buf[:n], nil)
	if err != nil {
		t.Fatalf("first reply is not Version Negotiation: %v", err)
	}
	return bytes.Clone(dcid), vs
}

// TestStatelessAnswersLikeTheAgent: the listener and the offload agent
// apply the same stateless rules (internal/stateless) to the datagrams no
// connection claims. Each datagram goes to both; the ones the agent drops
// the listener drops too, counted, and without a reply (the socket
// delivers in order, so a reply to a dropped datagram would come before
// the Version Negotiation that the last datagram elicits).
func TestStatelessAnswersLikeTheAgent(t *testing.T) {
	ctx := testCtx(t)
	tr, _ := avEchoServer(t, ctx, &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret})
	kr := testutil.KeyRing(t, testTokenSecret)
	eng, err := agent.New(agent.Config{KeyRing: kr})
	if err != nil {
		t.Fatal(err)
	}
	c := listenUDP(t)
	from := c.LocalAddr().(*net.UDPAddr).AddrPort()
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	drops := []struct {
		name    string
		pkt     []byte
		agent   agent.Reason
		counted DropReason
	}{
		{"version 0", rawLongHeader(0, dcid, []byte{9}, 1200), agent.ReasonVersionNegotiationIn, DropUnsupportedVersion},
		{"unknown version, 1199 bytes", rawLongHeader(0x1a2a3a4a, dcid, []byte{9}, 1199), agent.ReasonUnsupportedTooSmall, DropUnsupportedVersion},
		{"Initial, 1199 bytes", buildClientInitial(t, dcid, []byte{9}, nil, 1199), agent.ReasonInitialTooSmall, DropInitialTooSmall},
		{"DCID of 7 bytes", buildClientInitial(t, dcid[:7], []byte{9}, nil, 1200), agent.ReasonDCIDTooShort, DropInitialTooSmall},
		{"DCID of 21 bytes", rawLongHeader(1, make([]byte, 21), []byte{9}, 1200), agent.ReasonCIDTooLong, DropMalformed},
		{"Handshake", handshakeHeader(dcid, 1200), agent.ReasonUnknownConnection, DropUnknownConnection},
	}
	out := make([]byte, 0, agent.MaxReplyLen)
	before := tr.Stats().DatagramsDropped
	for _, d := range drops {
		if v, r, _ := eng.Worker(0).Process(d.pkt, from, out); r != d.agent || v != agent.Drop {
			t.Fatalf("%s: agent %v/%v, want drop/%v", d.name, v, r, d.agent)
		}
		if _, err := c.WriteTo(d.pkt, tr.Conn.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	// An unknown version in 1200 bytes: Version Negotiation from both,
	// listing v1, v2 and a reserved version.
	vnDCID := []byte{0xee, 0xee}
	vn := rawLongHeader(0xff00001d, vnDCID, []byte{0x5c}, 1200)
	_, _, agentVN := eng.Worker(0).Process(vn, from, out)
	_, _, agentVersions, err := wire.ParseVersionNegotiation(agentVN, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTo(vn, tr.Conn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	gotDCID, hostVersions := readVN(t, c)
	if !bytes.Equal(gotDCID, []byte{0x5c}) {
		t.Fatalf("the first reply answers DCID %x, not the last datagram: a dropped one was answered", gotDCID)
	}
	for who, vs := range map[string][]wire.Version{"host": hostVersions, "agent": agentVersions} {
		if len(vs) != 3 || !slices.Equal(vs[:2], []wire.Version{wire.Version1, wire.Version2}) || !vs[2].IsReserved() {
			t.Errorf("%s VN lists %v, want v1, v2 and a reserved version", who, vs)
		}
	}
	after := tr.Stats().DatagramsDropped
	want := map[string]uint64{}
	for _, d := range drops {
		want[d.counted.String()]++
	}
	for label, n := range want {
		if got := after[label] - before[label]; got != n {
			t.Errorf("%s: %d drops counted, want %d (%v)", label, got, n, after)
		}
	}
}

// TestServerVersionsForVN: a server lists the versions of its Config in
// its order, never a reserved version configured there (a client may list
// one to elicit Version Negotiation; a server accepts none), and a fresh
// reserved version of its own. A Config with only reserved versions cannot
// serve.
func TestServerVersionsForVN(t *testing.T) {
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{Versions: []Version{0x1a2a3a4a, Version2, Version1}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := listenUDP(t)
	if _, err := c.WriteTo(rawLongHeader(0x1a2a3a4a, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9}, 1200), ln.Addr()); err != nil {
		t.Fatal(err)
	}
	_, vs := readVN(t, c)
	if len(vs) != 3 || vs[0] != wire.Version2 || vs[1] != wire.Version1 || !vs[2].IsReserved() {
		t.Fatalf("VN lists %v, want v2, v1 and a reserved version", vs)
	}
	if ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{Versions: []Version{0x1a2a3a4a}}); err == nil {
		ln.Close()
		t.Fatal("a server with only a reserved version listened")
	}
}

// TestNewTokenShortDCIDAtHost: a valid new_token token does not vouch for
// a DCID under 8 bytes, whatever the policy (before the stateless
// responder the host accepted one whenever the policy accepted the valid
// token, as both shipped here do); a valid retry token does.
func TestNewTokenShortDCIDAtHost(t *testing.T) {
	client := netip.MustParseAddrPort("192.0.2.10:54321")
	remote := net.UDPAddrFromAddrPort(client)
	kr := testutil.KeyRing(t, testTokenSecret)
	newToken := func(r uint32) []byte {
		tok, err := kr.Mint(nil, token.MintParams{Source: token.SourceHost, Type: token.TypeNewToken, TimeMs: time.Now().UnixMilli(), R: r, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for name, policy := range map[string]AddressPolicy{"NeverRetry": NeverRetry(), "AlwaysRetry": AlwaysRetry()} {
		v := hostValidatorForTest(t, policy)
		hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: []byte{1, 2, 3, 4}, SrcConnID: []byte{7}, Token: newToken(1)}
		if dec := v.decide(&hdr, addrPortOf(remote), nil, new(retryRoom)); dec.action != initialDrop {
			t.Errorf("%s: new_token token with a 4-byte DCID: %+v, want a drop", name, dec)
		}
		// A fresh token: the dropped Initial used the first one up, as at
		// the agent.
		hdr.DestConnID = []byte{1, 2, 3, 4, 5, 6, 7, 8}
		hdr.Token = newToken(2)
		if dec := v.decide(&hdr, addrPortOf(remote), nil, new(retryRoom)); dec.action != initialAccept || !dec.validated {
			t.Errorf("%s: new_token token with an 8-byte DCID: %+v, want accepted", name, dec)
		}
	}
	rscid := []byte{4, 3, 2, 1}
	tok, err := kr.Mint(nil, token.MintParams{Source: token.SourceAgent, Type: token.TypeRetry, TimeMs: time.Now().UnixMilli(), Client: client, ODCID: bytes.Repeat([]byte{9}, 8), RSCID: rscid})
	if err != nil {
		t.Fatal(err)
	}
	hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: rscid, SrcConnID: []byte{7}, Token: tok}
	if dec := hostValidatorForTest(t, AlwaysRetry()).decide(&hdr, addrPortOf(remote), nil, new(retryRoom)); dec.action != initialAccept || !dec.validated || !bytes.Equal(dec.rscid, rscid) {
		t.Errorf("retry token for a 4-byte RSCID: %+v, want accepted", dec)
	}
}

// TestVersionNegotiationToQuicGo: quic-go's client, starting in v2 at a
// v1-only server of ours, takes our Version Negotiation (v1 and a reserved
// version) and connects in v1; one that speaks only v2 fails with the
// versions we listed, the reserved one among them.
func TestVersionNegotiationToQuicGo(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, &Config{Versions: []Version{Version1}})
	qc, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{Versions: []quicgo.Version{quicgo.Version2, quicgo.Version1}})
	if err != nil {
		t.Fatal(err)
	}
	echoOver(t, ctx, qc, 3)
	if got := qc.ConnectionState().Version; got != quicgo.Version1 {
		t.Errorf("quic-go client after Version Negotiation: version %s, want v1", got)
	}
	qc.CloseWithError(0, "")

	_, err = quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{Versions: []quicgo.Version{quicgo.Version2}})
	var ve *quicgo.VersionNegotiationError
	if !errors.As(err, &ve) || len(ve.Theirs) != 2 || ve.Theirs[0] != quicgo.Version1 || !wire.Version(ve.Theirs[1]).IsReserved() {
		t.Fatalf("v2-only quic-go client: %v, want VersionNegotiationError listing v1 and a reserved version", err)
	}
}
