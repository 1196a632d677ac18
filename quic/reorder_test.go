package quic

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/simnet"
)

// reorderLink reorders and never drops: 1% of datagrams are held back by
// 20 ms, half the RTT, on a 20 MB/s link with a 20 ms queue. Every loss a
// sender declares on it is spurious, unless its own burst overflows the
// queue.
var reorderLink = simnet.LinkConfig{
	Delay:        20 * time.Millisecond,
	Bandwidth:    20 << 20,
	QueueDelay:   20 * time.Millisecond,
	Reorder:      0.01,
	ReorderDelay: 20 * time.Millisecond,
}

// downloadToQuicGo has a server send size bytes on one stream to quic-go's
// client over s: ours with conf (nil: the defaults), or quic-go's when
// quicGoServer is set. It returns the virtual time from the request to the
// FIN, and our server's connection (nil for quic-go's).
func downloadToQuicGo(t *testing.T, s *sim, quicGoServer bool, conf *Config, size int) (time.Duration, *Conn) {
	t.Helper()
	payload := make([]byte, size)
	conns := make(chan *Conn, 1)
	if quicGoServer {
		tr := &quicgo.Transport{Conn: s.socket(simServerAddr).Conn}
		t.Cleanup(func() { tr.Close() })
		ln, err := tr.Listen(serverTLS(t), &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		go serveOneDownload(ln.Accept, func(c *quicgo.Conn) acceptFunc {
			return func(ctx context.Context) (io.ReadWriteCloser, error) { return c.AcceptStream(ctx) }
		}, payload)
		close(conns)
	} else {
		ln, err := s.transport(simServerAddr).Listen(serverTLS(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		go serveOneDownload(ln.Accept, func(c *Conn) acceptFunc {
			conns <- c
			return func(ctx context.Context) (io.ReadWriteCloser, error) { return c.AcceptStream(ctx) }
		}, payload)
	}
	_, c := s.dialQuicGo(simClientAddr(1), net.UDPAddrFromAddrPort(simServerAddr))
	st, err := c.OpenStreamSync(s.ctx())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := st.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	n, err := io.Copy(io.Discard, st)
	if err != nil || n != int64(size) {
		t.Fatalf("downloaded %d of %d bytes: %v", n, size, err)
	}
	return time.Since(start), <-conns
}

type acceptFunc = func(context.Context) (io.ReadWriteCloser, error)

// serveOneDownload accepts one connection (ours or quic-go's) and serves
// payload on its streams (serveDownload); streams turns the connection
// into its stream acceptor.
func serveOneDownload[C any](accept func(context.Context) (C, error), streams func(C) acceptFunc, payload []byte) {
	c, err := accept(context.Background())
	if err != nil {
		return
	}
	serveDownload(streams(c), payload)
}

// reorderingOf returns what our connection's loss detector learned.
func reorderingOf(c *Conn) recovery.ReorderingStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loss.rec.Reordering()
}

func TestReorderSpuriousLossesUndone(t *testing.T) {
	simTest(t, reorderLink, func(t *testing.T, s *sim) {
		elapsed, srv := downloadToQuicGo(t, s, false, nil, 4<<20)
		ns := s.net.Stats()
		st := srv.ConnectionStats()
		ro := reorderingOf(srv)
		t.Logf("%v virtual; network %+v; server %+v; reordering %+v", elapsed, ns, st, ro)
		if ns.Lost != 0 || ns.Reordered == 0 {
			t.Fatalf("the link did not just reorder: %+v", ns)
		}
		if ro.SpuriousLosses == 0 || st.PacketsSpuriouslyLost != ro.SpuriousLosses || st.PacketsLost < ro.SpuriousLosses {
			t.Fatalf("spurious losses: stats %+v, loss detector %+v", st, ro)
		}
		// Reductions whose every loss was a reordered packet came back.
		if ro.Undos == 0 {
			t.Fatalf("no window reduction undone: %+v", ro)
		}
		if ro.PacketThreshold <= 3 || ro.PacketThreshold > 1024 || ro.TimeThreshold <= 9.0/8 || ro.TimeThreshold > 2 {
			t.Fatalf("thresholds did not adapt within their caps: %+v", ro)
		}
	})
}

// BenchmarkReorderDownload10MB compares the servers on reorderLink: each
// iteration downloads 10 MB from ours, then from quic-go's, to quic-go's
// client in a fresh virtual-time network, and the metrics are the
// virtual-time throughputs (deterministic: ns/op is only the CPU cost of
// the simulation). The simnet harness needs a *testing.T, which a
// benchmark runs through testing.RunTests.
func BenchmarkReorderDownload10MB(b *testing.B) {
	const size = 10 << 20
	var ours, theirs time.Duration
	var spurious, undos uint64
	run := func(t *testing.T) {
		simTest(t, reorderLink, func(t *testing.T, s *sim) {
			d, srv := downloadToQuicGo(t, s, false, nil, size)
			ours += d
			ro := reorderingOf(srv)
			spurious += ro.SpuriousLosses
			undos += ro.Undos
		})
		simTest(t, reorderLink, func(t *testing.T, s *sim) {
			d, _ := downloadToQuicGo(t, s, true, nil, size)
			theirs += d
		})
	}
	n := 0
	for b.Loop() {
		if !testing.RunTests(func(string, string) (bool, error) { return true, nil },
			[]testing.InternalTest{{Name: "BenchmarkReorderDownload10MB", F: run}}) {
			b.Fatal("download failed")
		}
		n++
	}
	mbps := func(d time.Duration) float64 { return float64(n) * size / (1 << 20) / d.Seconds() }
	b.ReportMetric(mbps(ours), "ours-MB/s")
	b.ReportMetric(mbps(theirs), "quicgo-MB/s")
	b.ReportMetric(mbps(ours)/mbps(theirs), "ours/quicgo")
	b.ReportMetric(float64(spurious)/float64(n), "spurious/op")
	b.ReportMetric(float64(undos)/float64(n), "undos/op")
}
