package announce

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
)

// waitLimit is how long a test waits for something that must happen; it is
// a hang guard, not a performance assertion.
const waitLimit = 20 * time.Second

var (
	testKey  = [32]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}
	otherKey = [32]byte{0xff, 0xee, 0xdd}
	// t0 is the time of the tests (see atT0): 2026-01-02 03:04:05 UTC.
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// atT0 runs f in a synctest bubble whose virtual clock was moved to t0,
// the time the test messages and the seed vectors carry.
func atT0(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(t0))
		f(t)
	})
}

// cidN returns the n-th test connection ID of length l: n big-endian in the
// last bytes, l's value in the first, so different lengths never collide.
func cidN(n, l int) []byte {
	b := make([]byte, l)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(n))
	copy(b[max(l-8, 0):], v[max(8-l, 0):])
	b[0] ^= byte(l)
	return b
}

func cids(count, l int) [][]byte {
	out := make([][]byte, count)
	for i := range out {
		out[i] = cidN(i, l)
	}
	return out
}

func flat(ids [][]byte) []byte {
	var b []byte
	for _, id := range ids {
		b = append(b, id...)
	}
	return b
}

// encode builds a message the way the Announcer does.
func encode(key [32]byte, cidLen int, ts time.Time, ids [][]byte) []byte {
	var m macState
	return appendMessage(nil, &m, &key, cidLen, uint64(ts.UnixMilli()), flat(ids))
}

// sink records inserted connection IDs.
type sink struct {
	mu  sync.Mutex
	got map[string]int
	n   int
}

func newSink() *sink { return &sink{got: make(map[string]int)} }

func (s *sink) insert(cid []byte) {
	s.mu.Lock()
	s.got[string(cid)]++
	s.n++
	s.mu.Unlock()
}

func (s *sink) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *sink) missing(want [][]byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := 0
	for _, id := range want {
		if s.got[string(id)] == 0 {
			m++
		}
	}
	return m
}

// waitAll waits until every ID of want has been inserted.
func (s *sink) waitAll(t *testing.T, want [][]byte) {
	t.Helper()
	testutil.WaitFor(t, "all connection IDs inserted", func() bool { return s.missing(want) == 0 })
}

// waitStats polls get until done accepts its value and returns that
// value; it fails with the last value after waitLimit. Stats counters are
// bumped after the effect a test saw (a write returned, an ID inserted),
// so one read right after that effect can come short.
func waitStats[S any](t *testing.T, what string, get func() S, done func(S) bool) S {
	t.Helper()
	return testutil.WaitValue(t, what, waitLimit, get, done)
}

func listenUDP(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serving is a Listener running on a loopback socket.
type serving struct {
	l    *Listener
	conn *net.UDPConn
	addr netip.AddrPort
	sink *sink
	stop context.CancelFunc
	done chan error
}

// serve starts a Listener on conn (a fresh loopback socket when nil).
func serve(t *testing.T, conn *net.UDPConn, cfg ListenerConfig) *serving {
	t.Helper()
	if conn == nil {
		conn = listenUDP(t, "127.0.0.1:0")
	}
	s := &serving{conn: conn, addr: conn.LocalAddr().(*net.UDPAddr).AddrPort(), sink: newSink(), done: make(chan error, 1)}
	cfg.Conn = conn
	if cfg.Key == ([32]byte{}) {
		cfg.Key = testKey
	}
	if cfg.CIDLen == 0 {
		cfg.CIDLen = 8
	}
	cfg.Insert = s.sink.insert
	l, err := NewListener(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.l = l
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- l.Serve(ctx) }()
	t.Cleanup(func() { s.shutdown(t) })
	return s
}

// shutdown cancels Serve and checks that it returned context.Canceled.
func (s *serving) shutdown(t *testing.T) {
	t.Helper()
	if s.stop == nil {
		return
	}
	s.stop()
	s.stop = nil
	select {
	case err := <-s.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
	case <-time.After(waitLimit):
		t.Error("Serve did not return after its context ended")
	}
}

func newTestAnnouncer(t *testing.T, cfg AnnouncerConfig) *Announcer {
	t.Helper()
	if cfg.Key == ([32]byte{}) {
		cfg.Key = testKey
	}
	if cfg.CIDLen == 0 {
		cfg.CIDLen = 8
	}
	a, err := NewAnnouncer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// nopConn is a PacketConn for Listeners that are never served.
type nopConn struct{ net.PacketConn }
