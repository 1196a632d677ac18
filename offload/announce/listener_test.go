package announce

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// newDirectListener returns a Listener for handle() tests that need no
// socket.
func newDirectListener(t *testing.T, maxAge time.Duration) (*Listener, *sink) {
	t.Helper()
	s := newSink()
	conn := listenUDP(t, "127.0.0.1:0")
	l, err := NewListener(ListenerConfig{Conn: conn, Key: testKey, CIDLen: 8, MaxAge: maxAge, Insert: s.insert})
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

// resign replaces b's MAC with a valid one, so that a test reaches the
// checks after the MAC.
func resign(key [32]byte, b []byte) []byte {
	var m macState
	end := len(b) - MACLen
	copy(b[end:], m.sum(&key, b[:end]))
	return b
}

func TestListenerRejectsEveryReason(t *testing.T) { atT0(t, testListenerRejectsEveryReason) }

func testListenerRejectsEveryReason(t *testing.T) {
	l, s := newDirectListener(t, 30*time.Second)
	ids := cids(5, 8)
	good := encode(testKey, 8, t0, ids)
	mut := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	cases := []struct {
		name string
		msg  []byte
		want Reason
	}{
		{"short", good[:20], ReasonShort},
		{"magic", mut(func(b []byte) { b[0] = 'X' }), ReasonMagic},
		{"version", resign(testKey, mut(func(b []byte) { b[4] = 2 })), ReasonVersion},
		{"malformed count", mut(func(b []byte) { b[7] = 4 }), ReasonMalformed},
		{"malformed trailing", append(bytes.Clone(good), 0), ReasonMalformed},
		{"other cid length", encode(testKey, 4, t0, cids(10, 4)), ReasonCIDLen},
		{"wrong key", encode(otherKey, 8, t0, ids), ReasonMAC},
		{"flipped CID bit", mut(func(b []byte) { b[HeaderLen+3] ^= 1 }), ReasonMAC},
		{"flipped MAC bit", mut(func(b []byte) { b[len(b)-1] ^= 0x80 }), ReasonMAC},
		{"flipped timestamp", mut(func(b []byte) { b[15] ^= 1 }), ReasonMAC},
		{"too old", encode(testKey, 8, t0.Add(-31*time.Second), ids), ReasonTooOld},
		{"future", encode(testKey, 8, t0.Add(31*time.Second), ids), ReasonFuture},
		{"timestamp beyond int64", resign(testKey, mut(func(b []byte) { binary.BigEndian.PutUint64(b[8:], 1<<63) })), ReasonFuture},
		{"timestamp zero", resign(testKey, mut(func(b []byte) { binary.BigEndian.PutUint64(b[8:], 0) })), ReasonTooOld},
	}
	var want [NumReasons]uint64
	for _, c := range cases {
		if r := l.handle(c.msg); r != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, r, c.want)
		}
		want[c.want]++
	}
	if n := s.total(); n != 0 {
		t.Fatalf("rejected messages inserted %d connection IDs", n)
	}
	st := l.Stats()
	if st.Rejected != want || st.Messages != 0 || st.CIDs != 0 {
		t.Fatalf("stats %+v, want rejected %v", st, want)
	}
	for r := ReasonShort; r < NumReasons; r++ {
		if st.Rejected[r] == 0 {
			t.Errorf("reason %v not exercised", r)
		}
		if r.String() == "" || strings.HasPrefix(r.String(), "reason(") {
			t.Errorf("reason %d has no name", r)
		}
	}

	// The untouched message still passes, and inserts exactly its IDs.
	if r := l.handle(good); r != ReasonNone {
		t.Fatalf("good message: %v", r)
	}
	if s.missing(ids) != 0 || s.total() != len(ids) {
		t.Fatalf("inserted %d, missing %d", s.total(), s.missing(ids))
	}
	if st := l.Stats(); st.Messages != 1 || st.CIDs != 5 {
		t.Fatalf("stats after the good message %+v", st)
	}
}

// TestListenerReplayAfterMaxAge replays one captured message while the
// clock moves: accepted up to MaxAge, rejected after, nothing inserted.
func TestListenerReplayAfterMaxAge(t *testing.T) { atT0(t, testListenerReplayAfterMaxAge) }

func testListenerReplayAfterMaxAge(t *testing.T) {
	l, s := newDirectListener(t, 10*time.Second)
	msg := encode(testKey, 8, t0, cids(3, 8))
	if r := l.handle(msg); r != ReasonNone {
		t.Fatalf("fresh: %v", r)
	}
	time.Sleep(10 * time.Second)
	if r := l.handle(msg); r != ReasonNone {
		t.Fatalf("replay at exactly MaxAge: %v", r)
	}
	before := s.total()
	time.Sleep(time.Millisecond)
	if r := l.handle(msg); r != ReasonTooOld {
		t.Fatalf("replay after MaxAge: %v, want %v", r, ReasonTooOld)
	}
	if s.total() != before {
		t.Fatal("the stale replay inserted connection IDs")
	}
	// A message from the future is accepted up to MaxAge ahead.
	ahead := encode(testKey, 8, time.Now().Add(10*time.Second), cids(1, 8))
	if r := l.handle(ahead); r != ReasonNone {
		t.Fatalf("MaxAge ahead: %v", r)
	}
}

// TestListenerSetKeyGrace: after SetKey the old key is accepted for MaxAge,
// then only the new one.
func TestListenerSetKeyGrace(t *testing.T) { atT0(t, testListenerSetKeyGrace) }

func testListenerSetKeyGrace(t *testing.T) {
	l, _ := newDirectListener(t, 10*time.Second)
	l.SetKey(otherKey)
	if r := l.handle(encode(otherKey, 8, time.Now(), cids(1, 8))); r != ReasonNone {
		t.Fatalf("new key: %v", r)
	}
	if r := l.handle(encode(testKey, 8, time.Now(), cids(1, 8))); r != ReasonNone {
		t.Fatalf("previous key within the grace period: %v", r)
	}
	time.Sleep(10 * time.Second)
	if r := l.handle(encode(testKey, 8, time.Now(), cids(1, 8))); r != ReasonMAC {
		t.Fatalf("previous key after the grace period: %v, want %v", r, ReasonMAC)
	}
	if r := l.handle(encode(otherKey, 8, time.Now(), cids(1, 8))); r != ReasonNone {
		t.Fatalf("new key later: %v", r)
	}
	// Setting the same key again keeps the grace state; a third key drops
	// the first one for good.
	l.SetKey(otherKey)
	l.SetKey(testKey)
	l.SetKey(otherKey)
	l.SetKey([32]byte{9})
	if r := l.handle(encode(testKey, 8, time.Now(), cids(1, 8))); r != ReasonMAC {
		t.Fatalf("key two reloads back: %v, want %v", r, ReasonMAC)
	}
}

// TestListenerServeLoopback runs Serve on a real socket: garbage is
// counted, a valid message after it is inserted, and Serve stops on
// context cancel, can serve again, and stops when the socket closes.
func TestListenerServeLoopback(t *testing.T) {
	srv := serve(t, nil, ListenerConfig{})
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := cids(20, 8)
	for _, b := range [][]byte{{}, []byte("hello"), bytes.Repeat([]byte{0xff}, 9000), encode(otherKey, 8, time.Now(), ids)} {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Write(encode(testKey, 8, time.Now(), ids)); err != nil {
		t.Fatal(err)
	}
	srv.sink.waitAll(t, ids)
	testutil.WaitFor(t, "the garbage counted", func() bool {
		st := srv.l.Stats()
		return st.Rejected[ReasonShort] == 2 && st.Rejected[ReasonMagic] == 1 && st.Rejected[ReasonMAC] == 1
	})
	// The listener counts a message after inserting its IDs.
	st := waitStats(t, "the message counted", srv.l.Stats, func(st ListenerStats) bool { return st.Messages == 1 && st.CIDs == 20 })
	if st.Messages != 1 || st.CIDs != 20 {
		t.Fatalf("stats %+v", st)
	}

	// Cancel, then serve the same socket again.
	srv.shutdown(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.l.Serve(ctx) }()
	more := cids(30, 8)[20:]
	if _, err := c.Write(encode(testKey, 8, time.Now(), more)); err != nil {
		t.Fatal(err)
	}
	srv.sink.waitAll(t, more)
	if err := srv.l.Serve(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second concurrent Serve: %v", err)
	}
	srv.conn.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after Close returned %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Serve did not return after the socket closed")
	}
}

// TestListenerServeCanceledContext: a context that is already done stops
// Serve at once.
func TestListenerServeCanceledContext(t *testing.T) {
	l, _ := newDirectListener(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Serve(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v", err)
	}
}

func TestListenerConfigErrors(t *testing.T) {
	conn := listenUDP(t, "127.0.0.1:0")
	ok := ListenerConfig{Conn: conn, Key: testKey, CIDLen: 8, Insert: func([]byte) {}}
	for _, c := range []struct {
		name string
		edit func(*ListenerConfig)
		want string
	}{
		{"no conn", func(c *ListenerConfig) { c.Conn = nil }, "Conn"},
		{"no insert", func(c *ListenerConfig) { c.Insert = nil }, "Insert"},
		{"cid length 0", func(c *ListenerConfig) { c.CIDLen = 0 }, "length 0"},
		{"cid length 21", func(c *ListenerConfig) { c.CIDLen = 21 }, "length 21"},
		{"negative max age", func(c *ListenerConfig) { c.MaxAge = -time.Second }, "MaxAge"},
		{"zero key", func(c *ListenerConfig) { c.Key = [32]byte{} }, "all zero"},
	} {
		cfg := ok
		c.edit(&cfg)
		if _, err := NewListener(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := NewListener(ok); err != nil {
		t.Fatal(err)
	}
}

// TestInsertCannotAppendIntoBuffer: the slice handed to Insert has no spare
// capacity, so an Insert that appends cannot overwrite the next ID.
func TestInsertCannotAppendIntoBuffer(t *testing.T) { atT0(t, testInsertCannotAppendIntoBuffer) }

func testInsertCannotAppendIntoBuffer(t *testing.T) {
	ids := cids(3, 8)
	var got [][]byte
	conn := listenUDP(t, "127.0.0.1:0")
	l, err := NewListener(ListenerConfig{Conn: conn, Key: testKey, CIDLen: 8, Insert: func(cid []byte) {
		if cap(cid) != len(cid) {
			t.Errorf("cap %d for len %d", cap(cid), len(cid))
		}
		_ = append(cid, 0xAA)
		got = append(got, bytes.Clone(cid))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := l.handle(encode(testKey, 8, t0, ids)); r != ReasonNone {
		t.Fatal(r)
	}
	if !bytes.Equal(flat(got), flat(ids)) {
		t.Fatalf("got %x", got)
	}
}

// TestRejectLogging: configuration-type rejections warn at most once per
// warnEvery; everything else goes to debug.
func TestRejectLogging(t *testing.T) { atT0(t, testRejectLogging) }

func testRejectLogging(t *testing.T) {
	var out bytes.Buffer
	l, _ := newDirectListener(t, 0)
	l.log = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	from := netip.MustParseAddrPort("127.0.0.1:9")
	l.logReject(ReasonMAC, from, 100)
	l.logReject(ReasonMAC, from, 100)
	l.logReject(ReasonShort, from, 3)
	time.Sleep(warnEvery)
	l.logReject(ReasonTooOld, from, 100)
	if w, d := strings.Count(out.String(), "level=WARN"), strings.Count(out.String(), "level=DEBUG"); w != 2 || d != 2 {
		t.Fatalf("%d warnings, %d debug lines:\n%s", w, d, out.String())
	}
	if !strings.Contains(out.String(), "reason=bad_mac") || !strings.Contains(out.String(), "reason=too_old") {
		t.Fatalf("reasons missing:\n%s", out.String())
	}
}
