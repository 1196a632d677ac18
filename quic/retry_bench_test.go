package quic

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// retryFeedConn is a net.PacketConn that hands its reader an endless
// stream of client Initials (without token) and counts what is written
// back, so a server's Retry path (Initial in, Retry out) runs without the
// kernel. A window keeps the feed from outrunning the server's queues.
type retryFeedConn struct {
	pkts [][]byte
	// loopFrom: pkts[:loopFrom] are fed once, then pkts[loopFrom:] in turn.
	loopFrom int
	from     net.Addr
	local    net.Addr
	next     int
	window   chan struct{}
	written  atomic.Int64
	fed      atomic.Int64 // datagrams handed to the reader
	target   atomic.Int64
	done     chan struct{}
	closed   chan struct{}
	once     sync.Once
}

const retryFeedWindow = 64

func newRetryFeedConn(tb testing.TB) *retryFeedConn {
	var pkts [][]byte
	for i := range 64 {
		dcid := []byte{1, 2, 3, 4, 5, 6, 7, byte(i)}
		pkts = append(pkts, buildClientInitial(tb, dcid, []byte{9, 9, 9, 9}, nil, 1200))
	}
	return newFeedConn(pkts)
}

// newFeedConn is a retryFeedConn feeding pkts in turn.
func newFeedConn(pkts [][]byte) *retryFeedConn {
	c := &retryFeedConn{
		pkts:   pkts,
		from:   &net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000},
		local:  &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443},
		window: make(chan struct{}, retryFeedWindow),
		done:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	for range retryFeedWindow {
		c.window <- struct{}{}
	}
	c.target.Store(-1)
	return c
}

func (c *retryFeedConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case <-c.closed:
		return 0, nil, net.ErrClosed
	case <-c.window:
	default:
		// Only the slow path pays for a timer.
		select {
		case <-c.window:
		case <-c.closed:
			return 0, nil, net.ErrClosed
		case <-time.After(20 * time.Millisecond):
			// A reply went missing (the server dropped something): feed on.
		}
	}
	i := c.next
	if i >= len(c.pkts) {
		i = c.loopFrom + (i-c.loopFrom)%(len(c.pkts)-c.loopFrom)
	}
	p := c.pkts[i]
	c.next++
	c.fed.Add(1)
	return copy(b, p), c.from, nil
}

func (c *retryFeedConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	if n := c.written.Add(1); n == c.target.Load() {
		c.done <- struct{}{}
	}
	select {
	case c.window <- struct{}{}:
	default:
	}
	return len(b), nil
}

func (c *retryFeedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *retryFeedConn) LocalAddr() net.Addr { return c.local }

func (c *retryFeedConn) SetDeadline(time.Time) error { return nil }

func (c *retryFeedConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		_ = c.Close()
	}
	return nil
}

func (c *retryFeedConn) SetWriteDeadline(time.Time) error { return nil }

// run waits until n more replies were written.
func (c *retryFeedConn) run(b *testing.B, n int) {
	c.target.Store(c.written.Load() + int64(n))
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		b.Fatal("replies stopped")
	}
}

func benchRetry(b *testing.B, c *retryFeedConn) {
	// Warm up: the first replies prove the path works.
	c.run(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	c.run(b, b.N)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pkts/s")
}

// BenchmarkRetryHost measures our host Retry path: AlwaysRetry, a host
// universal token, the integrity tag. Run with -cpu=1 for per-core rates.
func BenchmarkRetryHost(b *testing.B) {
	c := newRetryFeedConn(b)
	tr := &Transport{Conn: c, AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
	defer tr.Close()
	if _, err := tr.Listen(serverTLS(b), nil); err != nil {
		b.Fatal(err)
	}
	benchRetry(b, c)
}

// BenchmarkRetryQuicGo is the same with quic-go's Retry
// (VerifySourceAddress returning true), the baseline.
func BenchmarkRetryQuicGo(b *testing.B) {
	c := newRetryFeedConn(b)
	tr := &quicgo.Transport{Conn: c, VerifySourceAddress: func(net.Addr) bool { return true }}
	defer tr.Close()
	if _, err := tr.Listen(serverTLS(b), &quicgo.Config{}); err != nil {
		b.Fatal(err)
	}
	benchRetry(b, c)
}
