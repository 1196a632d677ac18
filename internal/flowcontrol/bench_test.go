package flowcontrol

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

// BenchmarkReceiveConsumeUpdate is the receive path per packet: a STREAM
// frame accounted, the application reading it, and the update checks.
func BenchmarkReceiveConsumeUpdate(b *testing.B) {
	c := NewConnReceiver(WindowConfig{Initial: 1 << 20, Max: 1 << 26})
	s := NewStreamReceiver(0, c, WindowConfig{Initial: 1 << 19, Max: 1 << 24})
	now := time.Unix(0, 0)
	const size = 1200
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if s.Highest() > MaxOffset-(1<<30) {
			b.StopTimer()
			c.Init(WindowConfig{Initial: 1 << 20, Max: 1 << 26})
			s.Init(0, c, WindowConfig{Initial: 1 << 19, Max: 1 << 24})
			b.StartTimer()
		}
		now = now.Add(10 * time.Microsecond)
		if err := s.OnStreamFrame(s.Highest(), size, false); err != nil {
			b.Fatal(err)
		}
		if err := s.Consume(size); err != nil {
			b.Fatal(err)
		}
		s.MaybeUpdate(now, 20*time.Millisecond)
		c.MaybeUpdate(now, 20*time.Millisecond)
	}
}

// BenchmarkSendCredit is the send path per packet: credit check, consume,
// and the blocked check when credit runs out.
func BenchmarkSendCredit(b *testing.B) {
	conn := NewSendCredit(1 << 20)
	s := NewStreamSender(conn, 1<<20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		n := min(uint64(1200), s.Available())
		if n == 0 {
			s.StreamDataBlocked()
			conn.Blocked()
			s.OnMaxStreamData(s.Limit() + 1<<20)
			conn.OnMaxData(conn.Limit() + 1<<20)
			continue
		}
		if err := s.Consume(n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamOpenClose is a peer opening and closing streams, with
// MAX_STREAMS updates as they close.
func BenchmarkStreamOpenClose(b *testing.B) {
	var c StreamCounts
	c.Init(protocol.PerspectiveServer, 100, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		in := c.Incoming(Bidi)
		id, _ := NthStreamID(in.Opened(), protocol.PerspectiveClient, Bidi)
		if _, _, err := c.OnPeerFrame(id, true); err != nil {
			b.Fatal(err)
		}
		if err := in.Close(); err != nil {
			b.Fatal(err)
		}
		in.MaybeUpdate()
	}
}
