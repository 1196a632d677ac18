package agent

import (
	"bytes"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// TestClientInitialIsReal checks the test helper itself: the Initial opens
// with the server's Initial keys and carries the crypto/tls ClientHello.
func TestClientInitialIsReal(t *testing.T) {
	for _, v := range []wire.Version{wire.Version1, wire.Version2} {
		pkt := clientInitial(t, v, odcid, cscid, nil, 1200)
		if len(pkt) != 1200 {
			t.Fatalf("%v: Initial is %d bytes", v, len(pkt))
		}
		var h wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &h); err != nil || h.Type != wire.PacketTypeInitial {
			t.Fatalf("%v: parse: %v, type %v", v, err, h.Type)
		}
		_, opener, err := handshake.NewInitialKeys(odcid, handshake.Version(v), false)
		if err != nil {
			t.Fatal(err)
		}
		payload, _, err := opener.UnprotectPacket(bytes.Clone(pkt[:h.PacketLen]), h.PNOffset, -1)
		if err != nil {
			t.Fatalf("%v: open: %v", v, err)
		}
		var f wire.Frame
		if _, err := wire.ParseFrame(payload, &f); err != nil || f.Type != wire.FrameTypeCrypto {
			t.Fatalf("%v: first frame %v, %v", v, f.Type, err)
		}
		if !bytes.Equal(f.Data, realClientHello(t)) || f.Data[0] != 1 { // 1 = client_hello
			t.Fatalf("%v: CRYPTO frame is not the ClientHello", v)
		}
	}
}

// retryFlow (in a synctest bubble) runs figure 7 steps 1-4 for version v: Initial -> Retry, checked
// as a client and a host would, then the retried Initial -> Forward.
func retryFlow(t *testing.T, v wire.Version, from netip.AddrPort) {
	env := newTestEnv(t, nil)
	initial := clientInitial(t, v, odcid, cscid, nil, 1252)
	reply := mustProcess(t, env.w, initial, from, ReasonRetry)

	// The client's view: a Retry of the same version to its SCID, with a
	// valid integrity tag for the ODCID.
	var h wire.LongHeader
	if err := wire.ParseLongHeader(reply, &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != wire.PacketTypeRetry || h.Version != v {
		t.Fatalf("reply is %v %v, want Retry %v", h.Type, h.Version, v)
	}
	if !bytes.Equal(h.DestConnID, cscid) {
		t.Fatalf("Retry DCID %x, want the client's SCID %x", h.DestConnID, cscid)
	}
	if len(h.SrcConnID) != DefaultCIDLen || bytes.Equal(h.SrcConnID, odcid) {
		t.Fatalf("Retry SCID %x: want a fresh %d-byte CID", h.SrcConnID, DefaultCIDLen)
	}
	if err := handshake.VerifyRetryIntegrityTag(reply, handshake.Version(v), odcid); err != nil {
		t.Fatalf("integrity tag: %v", err)
	}
	if err := handshake.VerifyRetryIntegrityTag(reply, handshake.Version(v), cscid); err == nil {
		t.Fatal("integrity tag verifies for the wrong ODCID")
	}
	rscid := bytes.Clone(h.SrcConnID)
	tok := bytes.Clone(h.Token)

	// The host's view: an agent retry token binding the client, ODCID and
	// RSCID.
	var buf [token.MaxPayloadLen]byte
	res, err := env.hostValidator(t).Validate(tok, token.TypeRetry, from, time.Now(), buf[:0])
	if err != nil {
		t.Fatalf("host rejects the agent's token: %v", err)
	}
	if res.Source != token.SourceAgent || res.Type != token.TypeRetry {
		t.Fatalf("token source %v type %v", res.Source, res.Type)
	}
	if !bytes.Equal(res.ODCID, odcid) || !bytes.Equal(res.RSCID, rscid) {
		t.Fatalf("token ODCID %x RSCID %x, want %x %x", res.ODCID, res.RSCID, odcid, rscid)
	}
	if res.Client != from {
		t.Fatalf("token binds %v, want %v", res.Client, from)
	}
	if env.cache.len() != 0 {
		t.Fatal("a Retry admitted a CID")
	}

	// Step 3-4: the retried Initial (DCID = RSCID, keys from RSCID) is
	// forwarded and RSCID admitted.
	time.Sleep(3 * time.Second)
	retried := clientInitial(t, v, rscid, cscid, tok, 1200)
	mustProcess(t, env.w, retried, from, ReasonRetryTokenForwarded)
	if !env.cache.Contains(rscid) || env.cache.len() != 1 {
		t.Fatalf("cache %v, want only RSCID %x", env.cache.m, rscid)
	}

	// The same Initial from another port is someone else's.
	other := netip.AddrPortFrom(from.Addr(), from.Port()+1)
	mustProcess(t, env.w, retried, other, ReasonOfToken(token.ReasonPortMismatch))
}

func TestRetryFlowV1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { retryFlow(t, wire.Version1, clientAddr) })
}

// TestRetryFlowV2 covers QUIC v2, whose Initial and Retry type bits and
// integrity tag key differ (RFC 9369).
func TestRetryFlowV2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { retryFlow(t, wire.Version2, clientAddr) })
}

func TestRetryFlowIPv6(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { retryFlow(t, wire.Version1, clientAddr6) })
}

func TestRetryCIDLen(t *testing.T) {
	for _, n := range []int{1, 4, 20} {
		env := newTestEnv(t, func(c *Config) { c.CIDLen = n })
		reply := mustProcess(t, env.w, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), clientAddr, ReasonRetry)
		var h wire.LongHeader
		if err := wire.ParseLongHeader(reply, &h); err != nil {
			t.Fatal(err)
		}
		if len(h.SrcConnID) != n {
			t.Fatalf("CIDLen %d: RSCID has %d bytes", n, len(h.SrcConnID))
		}
	}
}

// TestRetryRSCIDsDiffer: every Retry gets a fresh random RSCID.
func TestRetryRSCIDsDiffer(t *testing.T) {
	env := newTestEnv(t, nil)
	pkt := clientInitial(t, wire.Version1, odcid, cscid, nil, 1200)
	seen := map[string]bool{}
	for range 50 {
		var h wire.LongHeader
		if err := wire.ParseLongHeader(mustProcess(t, env.w, pkt, clientAddr, ReasonRetry), &h); err != nil {
			t.Fatal(err)
		}
		if seen[string(h.SrcConnID)] {
			t.Fatalf("RSCID %x repeated", h.SrcConnID)
		}
		seen[string(h.SrcConnID)] = true
	}
}

// TestRetryTokenForOtherDCID: a valid retry token on an Initial whose DCID
// is neither its RSCID nor admitted is dropped; once egress admitted the
// host's SCID, the client's later Initials (DCID = that SCID) pass.
func TestRetryTokenForOtherDCID(t *testing.T) {
	for _, lookup := range []bool{true, false} {
		env := newTestEnv(t, nil)
		if !lookup {
			env = newTestEnv(t, func(c *Config) { c.Cache = insertOnly{env.cache} })
		}
		reply := mustProcess(t, env.w, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), clientAddr, ReasonRetry)
		var h wire.LongHeader
		if err := wire.ParseLongHeader(reply, &h); err != nil {
			t.Fatal(err)
		}
		tok := bytes.Clone(h.Token)
		hostSCID := []byte{9, 9, 9, 9, 9, 9, 9, 9}
		later := clientInitial(t, wire.Version1, hostSCID, cscid, tok, 1200)
		mustProcess(t, env.w, later, clientAddr, ReasonRSCIDMismatch)

		if !env.w.ObserveEgress(longPacket(t, wire.PacketTypeInitial, wire.Version1, cscid, hostSCID, 1200)) {
			t.Fatal("egress Initial not learned")
		}
		want := ReasonRetryTokenKnownCID
		if !lookup {
			want = ReasonRSCIDMismatch
		}
		mustProcess(t, env.w, later, clientAddr, want)
	}
}
