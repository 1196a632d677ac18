package announce

import (
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// TestRoundTrip sends more IDs than one message holds through a real
// Announcer and Listener on loopback.
func TestRoundTrip(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, Interval: time.Hour})
	ids := cids(1000, 8)
	for _, id := range ids {
		a.Add(id)
	}
	srv.sink.waitAll(t, ids)
	// Both sides count a message after the effect waitAll saw (the write
	// returned, the IDs were inserted).
	type both struct {
		a AnnouncerStats
		l ListenerStats
	}
	s := waitStats(t, "both sides to count every ID", func() both { return both{a.Stats(), srv.l.Stats()} },
		func(s both) bool { return s.a.CIDs == 1000 && s.l.CIDs == 1000 && s.l.Messages == s.a.Messages })
	st := s.a
	if min := uint64(1000 / MaxCIDsPerMessage(8)); st.Messages <= min || st.CIDs != 1000 || st.Dropped != 0 || st.SendErrors != 0 {
		t.Fatalf("announcer stats %+v", st)
	}
	if ls := s.l; ls.Messages != st.Messages || ls.CIDs != 1000 || ls.Rejected != [NumReasons]uint64{} {
		t.Fatalf("listener stats %+v, announcer %+v", ls, st)
	}
}

// TestRoundTripCIDLengths covers the extreme lengths, and shows Add copies
// its argument.
func TestRoundTripCIDLengths(t *testing.T) {
	for _, l := range []int{1, 20} {
		srv := serve(t, nil, ListenerConfig{CIDLen: l})
		a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, CIDLen: l, Interval: time.Hour})
		n := min(MaxCIDsPerMessage(l)+7, 250) // 250 distinct 1-byte IDs at most
		ids := cids(n, l)
		buf := make([]byte, l)
		for _, id := range ids {
			copy(buf, id)
			a.Add(buf)
			clear(buf)
		}
		srv.sink.waitAll(t, ids)
		// The announcer counts a message after its write returned, which
		// can be after the listener inserted its IDs.
		st := waitStats(t, "the announcer to count every ID", a.Stats, func(st AnnouncerStats) bool { return st.CIDs == uint64(n) })
		if st.Invalid != 0 || st.CIDs != uint64(n) {
			t.Fatalf("cidLen %d: %+v", l, st)
		}
	}
}

// TestAnnouncerSetKey: after both sides switch keys, IDs keep arriving.
func TestAnnouncerSetKey(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, Interval: time.Hour})
	first := cids(10, 8)
	for _, id := range first {
		a.Add(id)
	}
	srv.sink.waitAll(t, first)
	srv.l.SetKey(otherKey)
	a.SetKey(otherKey)
	second := cids(20, 8)[10:]
	for _, id := range second {
		a.Add(id)
	}
	srv.sink.waitAll(t, second)
	// The announcer really uses the new key: a listener that only knows
	// the old one rejects it.
	old := serve(t, nil, ListenerConfig{})
	b := newTestAnnouncer(t, AnnouncerConfig{Agent: old.addr, Interval: time.Hour})
	b.SetKey(otherKey)
	b.Add(cidN(99, 8))
	testutil.WaitFor(t, "a bad MAC rejection", func() bool { return old.l.Stats().Rejected[ReasonMAC] == 1 })
	if old.sink.total() != 0 {
		t.Fatal("inserted under the wrong key")
	}
}

// refusingPort returns a loopback UDP address nobody listens on: the test
// holds its port (no other process can take it meanwhile) with a socket
// connected elsewhere, so the kernel refuses what is sent there.
func refusingPort(t *testing.T) netip.AddrPort {
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// discarding returns a loopback socket whose datagrams are read and thrown
// away, as if nobody listened, until the returned function stops that and
// hands the socket over (the port stays the test's throughout).
func discarding(t *testing.T) (*net.UDPConn, func() *net.UDPConn) {
	conn := listenUDP(t, "127.0.0.1:0")
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return conn, func() *net.UDPConn {
		if err := conn.SetReadDeadline(time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		<-done
		if err := conn.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		return conn
	}
}

// TestReannounceReachesLateListener: IDs that were only ever in Active
// reach a listener that starts after the announcer's first re-announces,
// in many messages (more than a paced burst).
func TestReannounceReachesLateListener(t *testing.T) {
	conn, handOver := discarding(t)
	addr := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	n := (burstMessages+2)*MaxCIDsPerMessage(8) + 5
	ids := cids(n, 8)
	var calls sync.WaitGroup
	calls.Add(1)
	var once sync.Once
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: addr, Interval: 5 * time.Millisecond, Active: func(yield func([]byte) bool) {
		defer once.Do(calls.Done)
		for _, id := range ids {
			if !yield(id) {
				return
			}
		}
		yield([]byte{1, 2, 3}) // wrong length: skipped and counted
	}})
	calls.Wait()
	testutil.WaitFor(t, "a completed re-announce", func() bool { return a.Stats().Reannounces >= 1 })

	srv := serve(t, handOver(), ListenerConfig{})
	srv.sink.waitAll(t, ids)
	// A re-announce counts itself after its last send returned, which can
	// be after the listener inserted the IDs.
	st := waitStats(t, "the delivering re-announce counted", a.Stats, func(st AnnouncerStats) bool { return st.Reannounces >= 2 })
	if st.Invalid == 0 || st.Reannounces < 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAddNeverBlocks holds the sending goroutine inside Active and fills
// the queue: Add keeps returning, counts what it drops, and everything
// queued is sent once the goroutine is free again.
func TestAddNeverBlocks(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, Interval: time.Millisecond, Active: func(func([]byte) bool) {
		once.Do(func() {
			close(entered)
			<-release
		})
	}})
	<-entered // the goroutine is stuck: nothing is flushed from here on
	const extra = 100
	ids := cids(QueueCIDs+extra, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(ids); i += 4 {
				a.Add(ids[i])
			}
		}()
	}
	wg.Wait()
	if st := a.Stats(); st.Dropped != extra || st.Messages != 0 {
		t.Fatalf("stats with the sender stuck: %+v", st)
	}
	close(release)
	testutil.WaitFor(t, "the queue sent", func() bool { return srv.sink.total() == QueueCIDs })
	// The announcer counts a message after its write returned, which can
	// be after the listener inserted its IDs.
	st := waitStats(t, "the announcer to count the queue", a.Stats, func(st AnnouncerStats) bool { return st.CIDs == QueueCIDs })
	if st.CIDs != QueueCIDs {
		t.Fatalf("stats %+v", st)
	}
}

// TestAddWithoutListener: nobody listens, so sends fail (or vanish); Add
// still returns and Close still works.
func TestAddWithoutListener(t *testing.T) {
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: refusingPort(t), Interval: time.Millisecond,
		Active: func(yield func([]byte) bool) { yield(cidN(1, 8)) }})
	for _, id := range cids(10*QueueCIDs, 8) {
		a.Add(id)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseLeaksNothing: Close (twice) and Serve's cancel leave no
// goroutine behind; Add after Close is a no-op.
func TestCloseLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv := serve(t, nil, ListenerConfig{})
		a, err := NewAnnouncer(AnnouncerConfig{Agent: srv.addr, Key: testKey, CIDLen: 8, Interval: time.Millisecond,
			Active: func(yield func([]byte) bool) { yield(cidN(7, 8)) }})
		if err != nil {
			t.Fatal(err)
		}
		ids := cids(300, 8)
		for _, id := range ids {
			a.Add(id)
		}
		srv.sink.waitAll(t, ids)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		sent := a.Stats().CIDs
		a.Add(cidN(1, 8))
		if st := a.Stats(); st.CIDs != sent || st.Dropped != 0 {
			t.Fatalf("Add after Close changed %+v", st)
		}
		srv.shutdown(t)
	}()
	testutil.WaitFor(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

// TestAnnouncerConcurrent adds from many goroutines while keys are set and
// stats read on both sides; run it with -race.
func TestAnnouncerConcurrent(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, Interval: 2 * time.Millisecond,
		Active: func(yield func([]byte) bool) {
			for _, id := range cids(50, 8) {
				if !yield(id) {
					return
				}
			}
		}})
	const workers, each = 8, 250
	ids := cids(workers*each, 8)
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			a.SetKey(testKey)
			srv.l.SetKey(testKey)
			_ = a.Stats()
			_ = srv.l.Stats()
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range ids[w*each : (w+1)*each] {
				a.Add(id)
			}
		}()
	}
	wg.Wait()
	srv.sink.waitAll(t, ids)
	close(stop)
	side.Wait()
	if st := a.Stats(); st.Dropped != 0 || st.Invalid != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAnnouncerInvalidLength(t *testing.T) {
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: refusingPort(t), Interval: time.Hour})
	a.Add(nil)
	a.Add(make([]byte, 7))
	a.Add(make([]byte, 9))
	if st := a.Stats(); st.Invalid != 3 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAnnouncerConfigErrors(t *testing.T) {
	ok := AnnouncerConfig{Agent: netip.MustParseAddrPort("127.0.0.1:4433"), Key: testKey, CIDLen: 8}
	for _, c := range []struct {
		name string
		edit func(*AnnouncerConfig)
		want string
	}{
		{"no agent", func(c *AnnouncerConfig) { c.Agent = netip.AddrPort{} }, "agent address"},
		{"port 0", func(c *AnnouncerConfig) { c.Agent = netip.MustParseAddrPort("127.0.0.1:0") }, "agent address"},
		{"cid length 0", func(c *AnnouncerConfig) { c.CIDLen = 0 }, "length 0"},
		{"cid length 21", func(c *AnnouncerConfig) { c.CIDLen = 21 }, "length 21"},
		{"negative interval", func(c *AnnouncerConfig) { c.Interval = -1 }, "interval"},
		{"zero key", func(c *AnnouncerConfig) { c.Key = [32]byte{} }, "all zero"},
	} {
		cfg := ok
		c.edit(&cfg)
		if _, err := NewAnnouncer(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	a, err := NewAnnouncer(ok)
	if err != nil {
		t.Fatal(err)
	}
	if a.interval != DefaultInterval {
		t.Fatalf("interval %v", a.interval)
	}
	a.Close()
}

// TestAnnouncerSkip: IDs that Skip reports (the MAC covers them) are sent
// neither by Add nor by the re-announce; the others are, and the skipped
// ones are counted.
func TestAnnouncerSkip(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	ids := cids(200, 8)
	skip := func(cid []byte) bool { return cid[len(cid)-1]%2 == 1 }
	var want, skipped [][]byte
	for _, id := range ids {
		if skip(id) {
			skipped = append(skipped, id)
		} else {
			want = append(want, id)
		}
	}
	if len(want) == 0 || len(skipped) == 0 {
		t.Fatal("test IDs do not exercise both cases")
	}
	a := newTestAnnouncer(t, AnnouncerConfig{Agent: srv.addr, Interval: 5 * time.Millisecond, Skip: skip,
		Active: func(yield func([]byte) bool) {
			for _, id := range ids {
				if !yield(id) {
					return
				}
			}
		}})
	for _, id := range ids {
		a.Add(id)
	}
	srv.sink.waitAll(t, want)
	testutil.WaitFor(t, "two completed re-announces", func() bool { return a.Stats().Reannounces >= 2 })
	if m := srv.sink.missing(skipped); m != len(skipped) {
		t.Fatalf("%d skipped IDs reached the agent", len(skipped)-m)
	}
	if st := a.Stats(); st.Skipped < uint64(3*len(skipped)) {
		t.Fatalf("Skipped = %d, want at least %d (Add and two re-announces)", st.Skipped, 3*len(skipped))
	}
}
