package agent

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/prefixrate"
)

// retryTokenFor runs a tokenless Initial from from through w at now and
// returns the Retry's token and SCID: what the client's next Initial
// carries.
func retryTokenFor(t *testing.T, w *Worker, from netip.AddrPort, now time.Time) (tok, rscid []byte) {
	t.Helper()
	_, r, reply := w.ProcessAt(clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), from, make([]byte, 0, MaxReplyLen), now)
	if r != ReasonRetry {
		t.Fatalf("tokenless Initial: %v, want a Retry", r)
	}
	var h wire.LongHeader
	if err := wire.ParseLongHeader(reply, &h); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(h.Token), bytes.Clone(h.SrcConnID)
}

// validInitial is a client's Initial after a Retry from w at now.
func validInitial(t *testing.T, w *Worker, from netip.AddrPort, now time.Time) []byte {
	t.Helper()
	tok, rscid := retryTokenFor(t, w, from, now)
	return clientInitial(t, wire.Version1, rscid, cscid, tok, 1200)
}

func processAt(t *testing.T, w *Worker, pkt []byte, from netip.AddrPort, now time.Time, want Reason) []byte {
	t.Helper()
	v, r, reply := w.ProcessAt(pkt, from, make([]byte, 0, MaxReplyLen), now)
	if r != want || v != want.Verdict() {
		t.Fatalf("at +%v from %v: %v/%v, want %v", now.Sub(start), from, v, r, want)
	}
	return reply
}

// start is the virtual time the prefix tests begin at: the packets' times
// are passed in (ProcessAt), so nothing here reads a clock.
var start = time.Now()

// TestPrefixRateAgent: validated Initials of one /24 pass up to the burst,
// the next is answered with CONNECTION_REFUSED (a close the client can
// open) without a token being taken, another /24 is unaffected, Retries
// are never limited, one token comes back every 1/Rate, and the hook that
// feeds the XDP program fires when a bucket empties.
func TestPrefixRateAgent(t *testing.T) {
	var emptied []netip.Prefix
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 10, Burst: 3}
		c.OnPrefixEmpty = func(p netip.Prefix, tat, now int64) { emptied = append(emptied, p) }
	})
	w := env.w
	a := func(host byte) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, host}), 4433)
	}
	for i := range 3 {
		processAt(t, w, validInitial(t, w, a(byte(i+1)), start), a(byte(i+1)), start, ReasonRetryTokenForwarded)
	}
	if len(emptied) != 1 || emptied[0] != netip.MustParsePrefix("198.51.100.0/24") {
		t.Fatalf("OnPrefixEmpty calls %v", emptied)
	}
	over := validInitial(t, w, a(9), start) // the Retry itself is not limited
	reply := processAt(t, w, over, a(9), start, ReasonPrefixRateRefused)
	checkRefused(t, reply, over)

	// Another /24 and an IPv6 client are unaffected.
	b := netip.MustParseAddrPort("198.51.101.1:4433")
	processAt(t, w, validInitial(t, w, b, start), b, start, ReasonRetryTokenForwarded)
	processAt(t, w, validInitial(t, w, clientAddr6, start), clientAddr6, start, ReasonRetryTokenForwarded)

	// Refill: nothing before 100 ms, one token at 100 ms, one more at 200 ms.
	at := start.Add(100*time.Millisecond - time.Nanosecond)
	processAt(t, w, validInitial(t, w, a(9), at), a(9), at, ReasonPrefixRateRefused)
	at = start.Add(100 * time.Millisecond)
	processAt(t, w, validInitial(t, w, a(9), at), a(9), at, ReasonRetryTokenForwarded)
	processAt(t, w, validInitial(t, w, a(10), at), a(10), at, ReasonPrefixRateRefused)
	at = start.Add(200 * time.Millisecond)
	processAt(t, w, validInitial(t, w, a(10), at), a(10), at, ReasonRetryTokenForwarded)

	w.Flush()
	st := env.eng.Stats()
	if st.Packets[ReasonPrefixRateRefused] != 3 || st.Packets[ReasonRetry] != 10 {
		t.Fatalf("refused %d, retries %d", st.Packets[ReasonPrefixRateRefused], st.Packets[ReasonRetry])
	}
	if ps := env.eng.PrefixRateStats(); ps.Prefixes != 3 || ps.Allowed != 7 {
		t.Fatalf("prefix stats %+v", ps)
	}
}

// checkRefused opens reply as the client of initial would and checks it is
// a CONNECTION_CLOSE with CONNECTION_REFUSED.
func checkRefused(t *testing.T, reply, initial []byte) {
	t.Helper()
	var ch, h wire.LongHeader
	if err := wire.ParseLongHeader(initial, &ch); err != nil {
		t.Fatal(err)
	}
	if err := wire.ParseLongHeader(reply, &h); err != nil || h.Type != wire.PacketTypeInitial {
		t.Fatalf("reply %v, %v: want an Initial", h.Type, err)
	}
	_, opener, err := handshake.NewInitialKeys(ch.DestConnID, handshake.Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	payload, _, err := opener.UnprotectPacket(bytes.Clone(reply[:h.PacketLen]), h.PNOffset, -1)
	if err != nil {
		t.Fatalf("the client cannot open the close: %v", err)
	}
	var f wire.Frame
	if _, err := wire.ParseFrame(payload, &f); err != nil || f.Type != wire.FrameTypeConnectionClose || f.ErrorCode != 0x02 {
		t.Fatalf("frame %v code %#x (%v), want CONNECTION_CLOSE CONNECTION_REFUSED", f.Type, f.ErrorCode, err)
	}
}

// TestPrefixRateDropAndSpoofing: with Drop the over-rate Initial is
// dropped; spoofed Initials (bad tokens) from a prefix take none of its
// tokens, so they cannot refuse its real clients; a new_token Initial
// takes a token like a retry-token one; a connection's later Initials
// (known DCID) take none.
func TestPrefixRateDropAndSpoofing(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 1, Burst: 2, Action: prefixrate.Drop}
	})
	w := env.w
	from := clientAddr
	forged := clientInitial(t, wire.Version1, odcid, cscid, bytes.Repeat([]byte{0xee}, 60), 1200)
	for range 100 {
		if _, r, _ := w.ProcessAt(forged, from, make([]byte, 0, MaxReplyLen), start); r.Verdict() != Drop || r == ReasonPrefixRateDropped {
			t.Fatalf("forged token: %v", r)
		}
	}
	newTok := hostNewToken(t, env, from.Addr())
	processAt(t, w, clientInitial(t, wire.Version1, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, cscid, newTok, 1200), from, start, ReasonNewTokenForwarded)
	hostSCID := []byte{9, 9, 9, 9, 8, 8, 8, 8}
	if err := env.cache.Insert(hostSCID); err != nil { // what ObserveEgress does
		t.Fatal(err)
	}
	later := clientInitial(t, wire.Version1, hostSCID, cscid, newTok, 1200)
	processAt(t, w, later, from, start, ReasonNewTokenKnownCID)
	processAt(t, w, later, from, start, ReasonNewTokenKnownCID)
	processAt(t, w, validInitial(t, w, from, start), from, start, ReasonRetryTokenForwarded)
	// Empty now: every new attempt's Initial with a token is dropped, but
	// not a later one of an admitted connection (its DCID is known).
	processAt(t, w, validInitial(t, w, from, start), from, start, ReasonPrefixRateDropped)
	processAt(t, w, later, from, start, ReasonNewTokenKnownCID)
	processAt(t, w, forged, from, start, ReasonPrefixRateDropped)
	if ps := env.eng.PrefixRateStats(); ps.Allowed != 2 || ps.Refused != 0 {
		t.Fatalf("prefix stats %+v: a refused or forged Initial took a token", ps)
	}
}

// TestPrefixRateRefusalBudget: a worker builds at most RefuseRate closes
// per second for over-rate Initials (each costs the Initial keys); the
// rest are dropped, so a flood of them costs the agent a bounded CPU.
func TestPrefixRateRefusalBudget(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 0.001, Burst: 1, RefuseRate: 2}
	})
	w := env.w
	processAt(t, w, validInitial(t, w, clientAddr, start), clientAddr, start, ReasonRetryTokenForwarded)
	over := validInitial(t, w, clientAddr, start)
	for i, want := range []Reason{ReasonPrefixRateRefused, ReasonPrefixRateRefused, ReasonPrefixRateDropped, ReasonPrefixRateDropped} {
		if _, r, _ := w.ProcessAt(over, clientAddr, make([]byte, 0, MaxReplyLen), start); r != want {
			t.Fatalf("over-rate Initial %d: %v, want %v", i, r, want)
		}
	}
	at := start.Add(500 * time.Millisecond) // one close earned back
	processAt(t, w, over, clientAddr, at, ReasonPrefixRateRefused)
	processAt(t, w, over, clientAddr, at, ReasonPrefixRateDropped)
	at = start.Add(10 * time.Second) // no more than RefuseRate at once
	processAt(t, w, over, clientAddr, at, ReasonPrefixRateRefused)
	processAt(t, w, over, clientAddr, at, ReasonPrefixRateRefused)
	processAt(t, w, over, clientAddr, at, ReasonPrefixRateDropped)
}

// benchOverRate measures the agent on a validated Initial of a prefix over
// its rate (its burst of 1 taken first) with action act.
func benchOverRate(b *testing.B, act prefixrate.Action, want Reason) {
	env := newTestEnv(b, func(c *Config) {
		c.RetryMaxAge = time.Hour
		// No refusal budget to speak of: every over-rate Initial is
		// refused, so the close's cost is what is measured.
		c.PrefixRate = prefixrate.Config{Rate: 0.001, Burst: 1, Action: act, RefuseRate: 1e12}
	})
	tok, rscid := agentRetryToken(b, env)
	first := clientInitial(b, wire.Version1, rscid, cscid, tok, 1200)
	out := make([]byte, 0, MaxReplyLen)
	if _, r, _ := env.w.Process(first, clientAddr, out); r != ReasonRetryTokenForwarded {
		b.Fatalf("first Initial: %v", r)
	}
	// Another attempt of the prefix (the first one's datagrams pass).
	tok, rscid = agentRetryToken(b, env)
	pkt := clientInitial(b, wire.Version1, rscid, cscid, tok, 1200)
	if _, r, _ := env.w.Process(pkt, clientAddr, out); r != want {
		b.Fatalf("reason %v, want %v", r, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		env.w.Process(pkt, clientAddr, out)
	}
}

// BenchmarkPrefixRateRefuse: the agent's cost of refusing an over-rate
// Initial (no token validation; a CONNECTION_REFUSED close, whose Initial
// keys are derived per packet).
func BenchmarkPrefixRateRefuse(b *testing.B) {
	benchOverRate(b, prefixrate.Refuse, ReasonPrefixRateRefused)
}

// BenchmarkPrefixRateDrop: the same with Drop (what reaches the agent
// before the XDP program has the prefix's bucket).
func BenchmarkPrefixRateDrop(b *testing.B) {
	benchOverRate(b, prefixrate.Drop, ReasonPrefixRateDropped)
}

// TestPrefixRateChargesAttemptOnce: a connection attempt takes one token
// of its prefix however many datagrams its ClientHello spans (two here,
// and a retransmission), so an attempt admitted just before its prefix
// runs empty is not refused halfway; while the prefix is over, the
// admitted attempts' datagrams and their later Initials (to the host's
// ID, with the token) go on, a new attempt's do not, nor a later Initial
// whose token's attempt was refused. Each admitted attempt goes to
// OnAttemptAdmitted once.
func TestPrefixRateChargesAttemptOnce(t *testing.T) {
	type admitted struct {
		prefix netip.Prefix
		dcid   string
	}
	var hooked []admitted
	env := newTestEnv(t, func(c *Config) {
		c.PrefixRate = prefixrate.Config{Rate: 10, Burst: 2, Action: prefixrate.Drop}
		c.OnAttemptAdmitted = func(p netip.Prefix, dcid []byte) { hooked = append(hooked, admitted{p, string(dcid)}) }
	})
	w := env.w
	from := clientAddr
	attempt := func() (first, second []byte, rscid, tok []byte) {
		tok, rscid = retryTokenFor(t, w, from, start)
		return clientInitial(t, wire.Version1, rscid, cscid, tok, 1200),
			clientInitial(t, wire.Version1, rscid, cscid, tok, 1250), rscid, tok
	}
	a1, a2, rscidA, tokA := attempt()
	b1, b2, rscidB, _ := attempt()
	processAt(t, w, a1, from, start, ReasonRetryTokenForwarded)
	processAt(t, w, a2, from, start, ReasonRetryTokenForwarded)
	processAt(t, w, b1, from, start, ReasonRetryTokenForwarded) // the last token
	processAt(t, w, b2, from, start, ReasonRetryTokenForwarded) // over now, but B's
	c1, _, _, tokC := attempt()
	processAt(t, w, c1, from, start, ReasonPrefixRateDropped)
	processAt(t, w, a1, from, start.Add(time.Millisecond), ReasonRetryTokenForwarded) // a retransmission

	// Later Initials, to the host's SCID (which egress admitted).
	hostSCID := []byte{9, 9, 9, 9, 8, 8, 8, 8}
	if err := env.cache.Insert(hostSCID); err != nil {
		t.Fatal(err)
	}
	processAt(t, w, clientInitial(t, wire.Version1, hostSCID, cscid, tokA, 1200), from, start, ReasonRetryTokenKnownCID)
	processAt(t, w, clientInitial(t, wire.Version1, hostSCID, cscid, tokC, 1200), from, start, ReasonPrefixRateDropped)

	if ps := env.eng.PrefixRateStats(); ps.Allowed != 2 {
		t.Fatalf("prefix stats %+v: want 2 tokens taken, one per attempt", ps)
	}
	pfx := netip.PrefixFrom(from.Addr(), 24).Masked()
	want := []admitted{{pfx, string(rscidA)}, {pfx, string(rscidB)}}
	if len(hooked) != 2 || hooked[0] != want[0] || hooked[1] != want[1] {
		t.Fatalf("OnAttemptAdmitted calls %v, want %v", hooked, want)
	}
}
