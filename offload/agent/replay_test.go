package agent

import (
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// TestNewTokenSingleUse: a new_token token opens one connection attempt.
// Its first Initial is forwarded, and so is a retransmission of it (same
// DCID) and the connection's later Initials (DCID = the host's SCID,
// admitted from egress); the same token under another DCID, on any
// worker, is answered with a Retry the client can follow.
func TestNewTokenSingleUse(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Workers = 2 })
	tok := hostNewToken(t, env, clientAddr.Addr())
	dcid := []byte{1, 1, 2, 3, 5, 8, 13, 21, 34}
	first := clientInitial(t, wire.Version1, dcid, cscid, tok, 1200)
	mustProcess(t, env.w, first, clientAddr, ReasonNewTokenForwarded)
	mustProcess(t, env.w, first, clientAddr, ReasonNewTokenForwarded) // retransmission

	hostSCID := []byte{9, 9, 9, 9, 8, 8, 8, 8}
	if err := env.cache.Insert(hostSCID); err != nil { // what ObserveEgress does
		t.Fatal(err)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, hostSCID, cscid, tok, 1200), clientAddr, ReasonNewTokenKnownCID)

	// A replay from another port (the token binds the IP only), on the
	// other worker: a Retry for the replayed Initial's DCID.
	other := []byte{2, 7, 1, 8, 2, 8, 1, 8}
	from := netip.AddrPortFrom(clientAddr.Addr(), clientAddr.Port()+1)
	reply := mustProcess(t, env.eng.Worker(1), clientInitial(t, wire.Version1, other, cscid, tok, 1200), from, ReasonReplayedNewToken)
	var h wire.LongHeader
	if err := wire.ParseLongHeader(reply, &h); err != nil || h.Type != wire.PacketTypeRetry {
		t.Fatalf("reply: %v %v, want a Retry", h.Type, err)
	}
	if err := handshake.VerifyRetryIntegrityTag(reply, handshake.Version1, other); err != nil {
		t.Fatalf("Retry integrity tag: %v", err)
	}
	res, err := env.hostValidator(t).Validate(h.Token, token.TypeRetry, from, time.Now(), make([]byte, 0, token.MaxPayloadLen))
	if err != nil || string(res.ODCID) != string(other) {
		t.Fatalf("the Retry's token: %v, ODCID %x", err, res.ODCID)
	}
	// A replay whose DCID is too short for a Retry is dropped.
	mustProcess(t, env.w, clientInitial(t, wire.Version1, []byte{1, 2, 3}, cscid, tok, 1200), clientAddr, ReasonDCIDTooShort)

	for _, w := range []*Worker{env.w, env.eng.Worker(1)} {
		w.Flush()
	}
	st := env.eng.Stats()
	for r, want := range map[Reason]uint64{ReasonReplayedNewToken: 1, ReasonNewTokenKnownCID: 1, ReasonNewTokenForwarded: 2, ReasonDCIDTooShort: 1} {
		if got := st.Packets[r]; got != want {
			t.Errorf("%s/%s counted %d times, want %d", r.Verdict(), r, got, want)
		}
	}
	if ReasonReplayedNewToken.String() != "token_replayed" || ReasonNewTokenKnownCID.String() != "new_token_known_cid" {
		t.Errorf("labels %q, %q", ReasonReplayedNewToken, ReasonNewTokenKnownCID)
	}
	if st := env.eng.cfg.ReplayFilter.Stats(); st.FirstUses != 1 || st.Retransmissions != 1 || st.Replays != 2 {
		t.Errorf("replay filter stats %+v", st)
	}
}

// TestNewTokenReplayWithoutLookup: a cache that cannot look up cannot tell
// a connection's later Initials from replays, so the agent forwards them
// all and leaves the check to the host.
func TestNewTokenReplayWithoutLookup(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Cache = insertOnly{newFakeCache()} })
	tok := hostNewToken(t, env, clientAddr.Addr())
	for _, dcid := range [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, {8, 7, 6, 5, 4, 3, 2, 1}} {
		mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, tok, 1200), clientAddr, ReasonNewTokenForwarded)
	}
}

// TestReplayFilterShared: an engine given a filter uses it, so a token
// that the host (sharing the filter in the integrated mode) saw under
// another DCID is a replay here too, and the same DCID is not.
func TestReplayFilterShared(t *testing.T) {
	f, err := token.NewReplayFilter(token.ReplayFilterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.ReplayFilter = f })
	tok := hostNewToken(t, env, clientAddr.Addr())
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if err := f.Use(tok, dcid, time.Now()); err != nil { // the host's check
		t.Fatal(err)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, dcid, cscid, tok, 1200), clientAddr, ReasonNewTokenForwarded)
	mustProcess(t, env.w, clientInitial(t, wire.Version1, []byte{9, 8, 7, 6, 5, 4, 3, 2, 1}, cscid, tok, 1200), clientAddr, ReasonReplayedNewToken)
}

// TestNewTokenShortDCID: a valid new_token token does not vouch for a DCID
// under 8 bytes (RFC 9000 section 7.2; only a retry token binds a DCID the
// server chose). With a lookup the agent knows such an Initial is not a
// later one of a known connection and drops it, as the host does (both
// after the replay filter recorded the token); without one it cannot tell
// and forwards it, leaving the decision to the host.
func TestNewTokenShortDCID(t *testing.T) {
	short := []byte{4, 3, 2, 1}
	env := newTestEnv(t, nil)
	tok := hostNewToken(t, env, clientAddr.Addr())
	mustProcess(t, env.w, clientInitial(t, wire.Version1, short, cscid, tok, 1200), clientAddr, ReasonDCIDTooShort)
	if err := env.cache.Insert(short); err != nil { // a host SCID of 4 bytes, from egress
		t.Fatal(err)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, short, cscid, tok, 1200), clientAddr, ReasonNewTokenKnownCID)

	noLookup := newTestEnv(t, func(c *Config) { c.Cache = insertOnly{newFakeCache()} })
	tok = hostNewToken(t, noLookup, clientAddr.Addr())
	mustProcess(t, noLookup.w, clientInitial(t, wire.Version1, short, cscid, tok, 1200), clientAddr, ReasonNewTokenForwarded)
}
