package quic

import (
	"math"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestFairShareFormula: a lone prefix gets half a limit, n prefixes
// 1/(n+1) each, never less than the floor.
func TestFairShareFormula(t *testing.T) {
	for _, c := range []struct{ limit, n, floor, want int }{
		{128, 1, 2, 64},
		{128, 2, 2, 42},
		{128, 63, 2, 2},
		{128, 1000, 2, 2},
		{128, 1000, 0, 0},
		{4096, 3, 2, 1024},
		{math.MaxInt, 1, 2, math.MaxInt / 2},
	} {
		if got := fairShare(c.limit, c.n, c.floor); got != c.want {
			t.Errorf("fairShare(%d, %d, %d) = %d, want %d", c.limit, c.n, c.floor, got, c.want)
		}
	}
	for _, c := range []struct {
		used, limit int
		want        bool
	}{{63, 128, false}, {64, 128, true}, {1, 3, false}, {2, 3, true}, {1 << 40, math.MaxInt, false}} {
		if got := underPressure(c.used, c.limit); got != c.want {
			t.Errorf("underPressure(%d, %d) = %v", c.used, c.limit, got)
		}
	}
}

// TestPrefixOf groups IPv4 by /24, IPv6 by /56 and IPv4-mapped IPv6 as
// IPv4, or by the configured lengths.
func TestPrefixOf(t *testing.T) {
	a := newPrefixAdmission(&AdmissionConfig{})
	b := newPrefixAdmission(&AdmissionConfig{IPv4PrefixLen: 16, IPv6PrefixLen: 48})
	for _, c := range []struct{ addr, want, want2 string }{
		{"192.0.2.77:443", "192.0.2.0/24", "192.0.0.0/16"},
		{"[::ffff:192.0.2.77]:443", "192.0.2.0/24", "192.0.0.0/16"},
		{"[2001:db8:1:2ff:1:2:3:4]:443", "2001:db8:1:200::/56", "2001:db8:1::/48"},
	} {
		ua := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(c.addr))
		if got := a.prefixOf(addrPortOf(ua)).String(); got != c.want {
			t.Errorf("prefixOf(%s) = %s, want %s", c.addr, got, c.want)
		}
		if got := b.prefixOf(addrPortOf(ua)).String(); got != c.want2 {
			t.Errorf("prefixOf(%s) with /16 and /48 = %s, want %s", c.addr, got, c.want2)
		}
	}
}

// TestPrefixShareUnderPressure: below half of a limit a prefix takes what
// it likes; past it, its fair share.
func TestPrefixShareUnderPressure(t *testing.T) {
	a := newPrefixAdmission(&AdmissionConfig{})
	conf := &Config{MaxConnections: 100, MaxHandshakes: math.MaxInt}
	var load serverLoad
	p, _ := simPrefixAddr(1, 0).Addr().Prefix(24)
	other, _ := simPrefixAddr(2, 0).Addr().Prefix(24)
	admit := func(p netip.Prefix) *prefixEntry {
		e := a.admit(p, time.Now())
		load.conns++
		load.handshaking++
		return e
	}
	var held []*prefixEntry
	for {
		if _, refused := a.check(p, &load, conf, time.Now()); refused {
			break
		}
		held = append(held, admit(p))
	}
	if len(held) != 50 {
		t.Fatalf("a lone prefix got %d of 100 connections, want 50 (half)", len(held))
	}
	if r, refused := a.check(p, &load, conf, time.Now()); !refused || r != RefusedPrefixConnections {
		t.Fatalf("refusal %v %v, want prefix_connections", r, refused)
	}
	// Another prefix: share 100/3 = 33.
	n := 0
	for ; ; n++ {
		if _, refused := a.check(other, &load, conf, time.Now()); refused {
			break
		}
		admit(other)
	}
	if n != 33 {
		t.Fatalf("a second prefix got %d, want 33", n)
	}
	// Released connections make the entry idle again, and countable.
	for _, e := range held {
		a.connDone(e)
		a.handshakeDone(e)
	}
	if a.activeConns != 1 || a.activeHandshakes != 1 {
		t.Fatalf("active prefixes %d conns, %d handshakes; want 1, 1", a.activeConns, a.activeHandshakes)
	}
}

// TestPrefixRateBucket: a prefix gets its burst at once, then the rate.
func TestPrefixRateBucket(t *testing.T) {
	a := newPrefixAdmission(&AdmissionConfig{NewConnectionRate: 2, NewConnectionBurst: 4})
	conf := &Config{MaxConnections: math.MaxInt, MaxHandshakes: math.MaxInt}
	var load serverLoad
	p, _ := simPrefixAddr(1, 0).Addr().Prefix(24)
	now := a.epoch
	admitted := func(until time.Duration, step time.Duration) int {
		n := 0
		for ; now.Sub(a.epoch) < until; now = now.Add(step) {
			if _, refused := a.check(p, &load, conf, now); !refused {
				a.admit(p, now)
				n++
			}
		}
		return n
	}
	// A burst of attempts at one instant: 4.
	for i := 0; i < 10; i++ {
		if _, refused := a.check(p, &load, conf, now); !refused {
			a.admit(p, now)
		} else if i < 4 {
			t.Fatalf("attempt %d refused, want a burst of 4", i)
		}
	}
	if r, refused := a.check(p, &load, conf, now); !refused || r != RefusedPrefixRate {
		t.Fatalf("after the burst: %v %v, want prefix_rate", r, refused)
	}
	// Then 2 per second: 20 over the next 10 s, whatever the attempts.
	if n := admitted(10*time.Second+time.Millisecond, 10*time.Millisecond); n < 19 || n > 21 {
		t.Fatalf("%d admitted over 10 s at 2/s", n)
	}
	if d := newPrefixAdmission(&AdmissionConfig{NewConnectionRate: 10}); d.burst != 20 {
		t.Errorf("default burst %v, want 20", d.burst)
	}
}

// TestPrefixTableBounded: a spray of prefixes never grows the table past
// MaxPrefixes; busy entries stay (their counts are needed), idle ones
// are recycled least recently seen first, and once every entry is busy
// new prefixes share the overflow entry.
func TestPrefixTableBounded(t *testing.T) {
	const maxPrefixes = 64
	a := newPrefixAdmission(&AdmissionConfig{MaxPrefixes: maxPrefixes, NewConnectionRate: 1})
	conf := &Config{MaxConnections: math.MaxInt, MaxHandshakes: math.MaxInt}
	var load serverLoad
	prefix := func(i int) netip.Prefix { p, _ := simPrefixAddr(i, 0).Addr().Prefix(24); return p }
	// Ten busy prefixes.
	var busy []*prefixEntry
	for i := range 10 {
		busy = append(busy, a.admit(prefix(i), a.epoch))
	}
	for i := 10; i < 10000; i++ {
		// A connection from each, which ends.
		e := a.admit(prefix(i), a.epoch)
		a.handshakeDone(e)
		a.connDone(e)
		a.check(prefix(i), &load, conf, a.epoch)
		a.countRefusal(prefix(i))
		if len(a.entries) > maxPrefixes {
			t.Fatalf("%d prefixes tracked after %d, want at most %d", len(a.entries), i, maxPrefixes)
		}
	}
	if got, want := a.tableBytes(), int64(maxPrefixes)*prefixEntryCost; got != want || prefixEntryCost > 200 {
		t.Fatalf("table bytes %d, want %d (%d per prefix)", got, want, prefixEntryCost)
	}
	for i, e := range busy {
		if a.entries[prefix(i)] != e {
			t.Fatalf("busy prefix %d evicted", i)
		}
	}
	// The most recent idle prefixes are the ones kept.
	if a.entries[prefix(9999)] == nil || a.entries[prefix(100)] != nil {
		t.Fatal("the table kept old idle prefixes and dropped recent ones")
	}
	// Initials that only get checked or refused (spoofed ones answered
	// with a Retry, say) make no entry: they cannot push tracked
	// prefixes out.
	for i := 10000; i < 20000; i++ {
		a.check(prefix(i), &load, conf, a.epoch)
		a.countRefusal(prefix(i))
	}
	if a.entries[prefix(9999)] == nil || a.entries[prefix(10000)] != nil {
		t.Fatal("checks and refusals of untracked prefixes changed the table")
	}
	// Every entry busy: new prefixes share the overflow entry.
	for i := 20000; i < 20000+maxPrefixes; i++ {
		a.admit(prefix(i), a.epoch)
	}
	if e := a.admit(prefix(30000), a.epoch); e != &a.overflow || len(a.entries) != maxPrefixes {
		t.Fatalf("with every entry busy a new prefix got %p (overflow %p), %d entries", e, &a.overflow, len(a.entries))
	}
	shared := a.overflow.conns
	if e := a.admit(prefix(30001), a.epoch); e != &a.overflow || a.overflow.conns != shared+1 {
		t.Fatal("the overflow entry is not shared")
	}
	// The untracked prefixes are checked as one: under pressure the
	// overflow entry holds its share (2 among 65 prefixes) already.
	pressed := &Config{MaxConnections: 100, MaxHandshakes: math.MaxInt}
	full := serverLoad{conns: 90}
	if r, refused := a.check(prefix(40000), &full, pressed, a.epoch.Add(time.Hour)); !refused || r != RefusedPrefixConnections {
		t.Fatalf("an untracked prefix with the overflow entry over its share: %v %v, want prefix_connections", r, refused)
	}
	a.connDone(&a.overflow)
	a.handshakeDone(&a.overflow)
	if a.overflow.prev != nil {
		t.Fatal("the overflow entry went on the idle list")
	}
}

// TestTopRefusedPrefixes: the prefixes refused most, most first, bounded.
func TestTopRefusedPrefixes(t *testing.T) {
	a := newPrefixAdmission(&AdmissionConfig{})
	prefix := func(i int) netip.Prefix { p, _ := simPrefixAddr(i, 0).Addr().Prefix(24); return p }
	// Prefixes the table tracks (they held a connection).
	for i := 1; i <= 20; i++ {
		a.admit(prefix(i), a.epoch)
	}
	// Prefix i is refused i times, for 1..20, interleaved.
	for round := 1; round <= 20; round++ {
		for i := round; i <= 20; i++ {
			a.countRefusal(prefix(i))
		}
	}
	if a.topLen != topRefusedPrefixes {
		t.Fatalf("%d prefixes in the top list", a.topLen)
	}
	for k := range a.topLen {
		if want := 20 - k; a.top[k].Prefix != prefix(want) || a.top[k].Refused != uint64(want) {
			t.Errorf("top %d: %v, want %v refused %d times", k, a.top[k], prefix(want), want)
		}
	}
	// An untracked prefix counts 1 a refusal: it does not displace them.
	for range 100 {
		a.countRefusal(prefix(1000))
	}
	if a.top[topRefusedPrefixes-1].Prefix != prefix(13) {
		t.Errorf("an untracked prefix entered the full top list: %v", a.top)
	}
}

// TestAdmissionCheckAllocs: checking a client Initial against the global
// and prefix limits, and counting its refusal, allocate nothing.
func TestAdmissionCheckAllocs(t *testing.T) {
	conf := &Config{MaxConnections: 10, MaxHandshakes: 10, AcceptBacklog: 10}
	s := &baseServer{config: conf, acceptCh: make(chan *Conn, 1), prefixes: newPrefixAdmission(&AdmissionConfig{NewConnectionRate: 5})}
	remote := net.UDPAddrFromAddrPort(simPrefixAddr(1, 1))
	s.prefixes.admit(s.prefixes.prefixOf(addrPortOf(remote)), time.Now())
	s.load.conns, s.load.handshaking = 6, 6
	if n := testing.AllocsPerRun(100, func() {
		if r, refused := s.checkAdmission(addrPortOf(remote), false); refused {
			s.prefixes.countRefusal(s.prefixes.prefixOf(addrPortOf(remote)))
			_ = r
		}
	}); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
