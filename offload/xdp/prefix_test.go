//go:build linux

package xdp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/prefixrate"
)

// initialWithToken is a QUIC v1 Initial of 1200 bytes with tok as its
// token (none when empty).
func initialWithToken(tok []byte) []byte {
	b := []byte{0xc0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 4, 9, 9, 9, 9}
	b = append(b, byte(len(tok))) // under 64: a one-octet varint
	b = append(b, tok...)
	for len(b) < 1200 {
		b = append(b, 0)
	}
	return b
}

// from4 and from6 rewrite the source address of a frame built by udp4 or
// udp6.
func from4(frame []byte, src string) []byte {
	a := netip.MustParseAddr(src).As4()
	f := bytes.Clone(frame)
	copy(f[14+12:], a[:])
	return f
}

func from6(frame []byte, src string) []byte {
	a := netip.MustParseAddr(src).As16()
	f := bytes.Clone(frame)
	copy(f[14+8:], a[:])
	return f
}

// prefixTestClock is where the tests' program clock starts (any value not
// 0: 0 means "no test clock").
const prefixTestClock = uint64(1_000_000 * time.Second)

// loadPrefixLimited loads a filtering program with the prefix limit pr and
// the test clock at prefixTestClock, and returns it with an agent-side
// Limiter whose emptied buckets go to the program, as the datapath wires
// them. The Limiter's clock is agentTime(program clock).
func loadPrefixLimited(tb testing.TB, pr prefixrate.Config) (*Program, *prefixrate.Limiter) {
	tb.Helper()
	p := loadForTest(tb, Config{Port: testPort, Key: testKey, StaleAfter: 3600e9, PrefixRate: pr})
	if err := p.Beat(MonotonicNow()); err != nil {
		tb.Fatal(err)
	}
	if err := p.setClockForTest(prefixTestClock); err != nil {
		tb.Fatal(err)
	}
	l, err := prefixrate.NewLimiter(pr, p.PrefixEmptied)
	if err != nil {
		tb.Fatal(err)
	}
	return p, l
}

// agentTime maps the program's test clock to the agent's clock (an
// arbitrary Unix time): the two clocks differ by a constant, as
// CLOCK_MONOTONIC and the wall clock do.
func agentTime(mono uint64) time.Time {
	return time.Unix(1_700_000_000, 0).Add(time.Duration(mono - prefixTestClock))
}

func setClock(tb testing.TB, p *Program, mono uint64) {
	tb.Helper()
	if err := p.setClockForTest(mono); err != nil {
		tb.Fatal(err)
	}
}

var clientTok = bytes.Repeat([]byte{0x7e}, 40)

// TestPrefixRateXDP: once the agent has taken a /24's burst, the program
// drops that prefix's Initials with a token by itself, while Initials
// without a token (which get Retries) and other prefixes still go to the
// agent; one token refills every 1/Rate of the program's clock, never
// earlier, and after a quiet time the prefix is free again.
func TestPrefixRateXDP(t *testing.T) {
	p, l := loadPrefixLimited(t, prefixrate.Config{Rate: 10, Burst: 4, Action: prefixrate.Drop})
	withTok := udp4(testPort, initialWithToken(clientTok))
	noTok := udp4(testPort, initialWithToken(nil))
	attacker := func(host string) []byte { return from4(withTok, "203.0.113."+host) }
	now := prefixTestClock
	// The burst: the agent takes 4 tokens; the program lets each through.
	for i := range 4 {
		expect(t, p, attacker("1"), xdpPass, PassNoSocket) // no AF_XDP socket: to the kernel
		if !l.Allow(netip.MustParseAddr("203.0.113.1"), agentTime(now)) {
			t.Fatalf("agent refused token %d of 4", i)
		}
	}
	expect(t, p, attacker("1"), xdpDrop, DropPrefixRate)
	expect(t, p, attacker("250"), xdpDrop, DropPrefixRate) // the whole /24
	expect(t, p, from4(noTok, "203.0.113.1"), xdpPass, PassNoSocket)
	expect(t, p, from4(withTok, "203.0.114.1"), xdpPass, PassNoSocket)
	expect(t, p, withTok, xdpPass, PassNoSocket)

	// Refill at the configured rate: 100 ms per token.
	for k := uint64(1); k <= 3; k++ {
		at := now + k*uint64(100*time.Millisecond)
		setClock(t, p, at-1)
		expect(t, p, attacker("1"), xdpDrop, DropPrefixRate)
		setClock(t, p, at)
		expect(t, p, attacker("1"), xdpPass, PassNoSocket)
		// The agent validates it and takes the token that came back.
		if !l.Allow(netip.MustParseAddr("203.0.113.1"), agentTime(at)) {
			t.Fatalf("agent refused the token refilled at +%v", time.Duration(at-now))
		}
		expect(t, p, attacker("1"), xdpDrop, DropPrefixRate)
	}
	setClock(t, p, now+uint64(time.Hour))
	expect(t, p, attacker("1"), xdpPass, PassNoSocket)
	if e := p.PrefixWriteErrors(); e != 0 {
		t.Fatalf("%d bucket writes failed", e)
	}
}

// TestPrefixRateXDPAgreesWithAgent: driven by random arrivals, the
// program's verdict on a prefix's next Initial (dropped or not) is the
// agent's Limiter.Over at the same instant, for IPv4 /24s and IPv6 /56s.
func TestPrefixRateXDPAgreesWithAgent(t *testing.T) {
	p, l := loadPrefixLimited(t, prefixrate.Config{Rate: 10, Burst: 3, Action: prefixrate.Drop})
	r := rand.New(rand.NewPCG(27, 1))
	v4 := udp4(testPort, initialWithToken(clientTok))
	v6 := udp6(testPort, initialWithToken(clientTok))
	srcs := []string{"198.51.100.1", "198.51.100.77", "198.51.101.1", "2001:db8:1:100::1", "2001:db8:1:1ff::9", "2001:db8:1:200::1"}
	now := prefixTestClock
	var drops, passes int
	for range 2000 {
		now += uint64(r.IntN(int(10 * time.Millisecond)))
		setClock(t, p, now)
		src := srcs[r.IntN(len(srcs))]
		addr := netip.MustParseAddr(src)
		var frame []byte
		if addr.Is4() {
			frame = from4(v4, src)
		} else {
			frame = from6(v6, src)
		}
		over := l.Over(addr, agentTime(now))
		act := run(t, p, frame)
		if (act == xdpDrop) != over {
			t.Fatalf("at +%v %s: program action %d, agent over=%v", time.Duration(now-prefixTestClock), src, act, over)
		}
		if over {
			drops++
			continue
		}
		passes++
		l.Allow(addr, agentTime(now)) // the agent validated it
	}
	if drops < 100 || passes < 100 {
		t.Fatalf("%d drops, %d passes: the arrivals did not exercise both", drops, passes)
	}
	c := counters(t, p)
	if c[DropPrefixRate] != uint64(drops) {
		t.Fatalf("drop_prefix_rate %d, want %d", c[DropPrefixRate], drops)
	}
}

// TestPrefixRateRefuseGoesToAgent: with prefixrate.Refuse the program
// cannot build the encrypted close, so it redirects the over-rate Initial
// to the agent (which refuses it without validating), counted apart.
func TestPrefixRateRefuseGoesToAgent(t *testing.T) {
	p, l := loadPrefixLimited(t, prefixrate.Config{Rate: 1, Burst: 1})
	fd := newXSK(t)
	if err := p.XSKMap().Update(uint32(0), uint32(fd), ebpf.UpdateAny); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, os.ErrPermission) {
			t.Skipf("skipping: kernel does not take an unbound AF_XDP socket into the XSKMAP: %v", err)
		}
		t.Fatalf("XSKMAP update: %v", err)
	}
	frame := udp4(testPort, initialWithToken(clientTok))
	expect(t, p, frame, xdpRedirect, AgentInitial)
	l.Allow(netip.MustParseAddr("198.18.0.1"), agentTime(prefixTestClock))
	expect(t, p, frame, xdpRedirect, AgentPrefixRate)
}

// TestPrefixRateLRUBounded: the program's prefix map never holds more than
// MaxPrefixes entries however many prefixes the agent writes; the newest
// are kept. With the limit off nothing is dropped.
func TestPrefixRateLRUBounded(t *testing.T) {
	p, _ := loadPrefixLimited(t, prefixrate.Config{Rate: 1, Burst: 1, MaxPrefixes: 64, Action: prefixrate.Drop})
	far := prefixTestClock + uint64(time.Hour)
	for i := range 5000 {
		pr := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
		if err := p.LimitPrefix(pr, far); err != nil {
			t.Fatal(err)
		}
	}
	n, err := p.prefixEntries()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > 64 {
		t.Fatalf("%d prefixes in the map, bound 64", n)
	}
	// The last written prefix is still there and limited.
	expect(t, p, from4(udp4(testPort, initialWithToken(clientTok)), "10.19.135.1"), xdpDrop, DropPrefixRate)

	off := loadFiltering(t)
	if err := off.LimitPrefix(netip.MustParsePrefix("198.18.0.0/24"), far); err != nil {
		t.Fatal(err)
	}
	expect(t, off, udp4(testPort, initialWithToken(clientTok)), xdpPass, PassNoSocket)
}

// initialWithDCID is initialWithToken with dcid as the DCID.
func initialWithDCID(dcid, tok []byte) []byte {
	b := []byte{0xc0, 0, 0, 0, 1, byte(len(dcid))}
	b = append(b, dcid...)
	b = append(b, 4, 9, 9, 9, 9, byte(len(tok)))
	b = append(b, tok...)
	for len(b) < 1200 {
		b = append(b, 0)
	}
	return b
}

// TestPrefixRateXDPAdmittedAttempt: a connection attempt the agent
// admitted (its token taken, AttemptAdmitted written) keeps getting its
// Initials through while its prefix is over: the second datagram of its
// ClientHello and its retransmissions, whichever address of the prefix
// they come from; a new attempt's Initials, the same DCID from another
// prefix, and a DCID differing in its length only, are dropped.
func TestPrefixRateXDPAdmittedAttempt(t *testing.T) {
	p, l := loadPrefixLimited(t, prefixrate.Config{Rate: 10, Burst: 2, Action: prefixrate.Drop})
	frame := func(src string, dcid []byte) []byte {
		return from4(udp4(testPort, initialWithDCID(dcid, clientTok)), src)
	}
	dcidA := []byte{0xa, 1, 2, 3, 4, 5, 6, 7}
	dcidB := []byte{0xb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	dcidC := []byte{0xc, 1, 2, 3, 4, 5, 6, 7}
	src := netip.MustParseAddr("203.0.113.1")
	now := agentTime(prefixTestClock)
	// The agent admits A and B, as it does on their first datagrams.
	for _, d := range [][]byte{dcidA, dcidB} {
		expect(t, p, frame("203.0.113.1", d), xdpPass, PassNoSocket)
		if ok, first := l.AllowAttempt(src, d, now); !ok || !first {
			t.Fatalf("agent: attempt %x ok %v first %v", d, ok, first)
		}
		p.AttemptAdmitted(l.Config().PrefixOf(src), d)
	}
	// Over now: B's second datagram, A's retransmission (from another
	// address of the /24) pass; a new attempt does not.
	expect(t, p, frame("203.0.113.1", dcidB), xdpPass, PassNoSocket)
	expect(t, p, frame("203.0.113.9", dcidA), xdpPass, PassNoSocket)
	expect(t, p, frame("203.0.113.1", dcidC), xdpDrop, DropPrefixRate)
	expect(t, p, frame("203.0.113.1", dcidA[:7]), xdpDrop, DropPrefixRate)
	// Another /24, over too, did not admit A.
	other := netip.MustParseAddr("203.0.114.1")
	for range 2 {
		l.AllowAttempt(other, dcidC, now)
		l.AllowAttempt(other, dcidB, now)
	}
	expect(t, p, frame("203.0.114.1", dcidA), xdpDrop, DropPrefixRate)
	if e := p.PrefixWriteErrors(); e != 0 {
		t.Fatalf("%d writes failed", e)
	}
}

// TestPrefixRateXDPAttemptsBounded: the attempts' map holds at most
// MaxAttempts entries however many the agent writes.
func TestPrefixRateXDPAttemptsBounded(t *testing.T) {
	p, _ := loadPrefixLimited(t, prefixrate.Config{Rate: 1, Burst: 1, MaxAttempts: 64, Action: prefixrate.Drop})
	pr := netip.MustParsePrefix("198.18.0.0/24")
	for i := range 5000 {
		p.AttemptAdmitted(pr, []byte{byte(i), byte(i >> 8), 0, 0, 0, 0, 0, 0})
	}
	n, err := p.attemptEntries()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > 64 || p.PrefixWriteErrors() != 0 {
		t.Fatalf("%d attempts in the map (bound 64), %d write errors", n, p.PrefixWriteErrors())
	}
}
