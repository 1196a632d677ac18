package quic

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Issue 23's attack: a peer sends one-byte STREAM frames spread over the
// flow-control window, offset 0 never sent, so that nothing is readable
// and everything stays buffered. The helpers here make one of our clients
// send such frames as a raw attacker would (its own state knows nothing
// of them); this file uses nothing but them and the public API, so that it
// also runs on the code before the fix, for the figures in
// docs/performance.md.

const (
	sparseFrames = 49       // frames per stream
	sparseGap    = 16 << 10 // between their offsets
)

// sparseStreamFrames returns n STREAM frames of size bytes each on stream
// id, at offsets gap, 2*gap, ... n*gap.
func sparseStreamFrames(id uint64, n, size int, gap uint64) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = wire.AppendStreamFrame(nil, id, uint64(i+1)*gap, make([]byte, size), false, true)
	}
	return frames
}

// sendRawFrames has our connection c send frames, packed into as few
// 1-RTT packets as fit: each frame must start with its one-byte type.
// c's streams and flow control do not know of them. It first waits for
// the handshake to be confirmed (in virtual time): a server that has not
// completed it yet would drop most of a burst of 1-RTT packets, which
// nothing sends again.
func sendRawFrames(t testing.TB, c *Conn, frames [][]byte) {
	t.Helper()
	const room = 1000 // payload per packet, leaving room for header and tag
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		if c.hs.confirmed {
			break // still locked
		}
		c.mu.Unlock()
		if time.Since(start) > 10*time.Second {
			t.Fatal("the handshake was never confirmed")
		}
	}
	defer c.mu.Unlock()
	for len(frames) > 0 {
		var payload []byte
		for len(frames) > 0 && (len(payload) == 0 || len(payload)+len(frames[0]) <= room) {
			payload = append(payload, frames[0]...)
			frames = frames[1:]
		}
		d := c.buildPathDatagram(time.Now(), c.cids.dest, payload, maxPacketSize, false)
		if d == nil {
			t.Fatalf("no packet for %d bytes of frames", len(payload))
		}
		c.send.pending = append(c.send.pending, outDatagram{b: d, pooled: true})
	}
	c.wake()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// sparseClientAddr numbers client addresses beyond simClientAddr's 255.
func sparseClientAddr(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(2 + i/250), byte(1 + i%250)}), 4000)
}

// heapInuse returns HeapInuse after two collections, and HeapAlloc (live
// objects only: HeapInuse also counts the free room of spans in use).
func heapInuse() (inuse, alloc int64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse), int64(ms.HeapAlloc)
}

// TestSparseStreamHeapPerConnection measures the server's heap under the
// attack: N connections each send 49 one-byte frames 16 KiB apart on one
// stream. It reports the heap each attacking connection costs and what
// is left once they closed, and fails if a connection costs more than
// 64 KiB (it cost about 800 KiB when every frame pinned a 16 KiB chunk).
// N is 100, or TURBORETRY_SPARSE_CONNS (docs/performance.md uses 1200).
func TestSparseStreamHeapPerConnection(t *testing.T) {
	n := 100
	if v := os.Getenv("TURBORETRY_SPARSE_CONNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 || n > 60000 {
			t.Fatalf("TURBORETRY_SPARSE_CONNS=%q", v)
		}
	}
	simTest(t, simLink, func(t *testing.T, s *sim) {
		base, baseAlloc := heapInuse()
		tr := s.transport(simServerAddr)
		ln, err := tr.Listen(serverTLS(t), &Config{
			InitialStreamReceiveWindow: 1 << 20, InitialConnectionReceiveWindow: 1 << 20,
			MaxConnections: n + 1, MaxHandshakes: n + 1, AcceptBacklog: n + 1,
			MaxIdleTimeout: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var served []*Conn
		acceptDone := make(chan struct{})
		go func() {
			defer close(acceptDone)
			for range n {
				c, err := ln.Accept(ctx)
				if err != nil {
					return
				}
				served = append(served, c)
			}
		}()
		clients := make([]*Conn, n)
		clientTransports := make([]*Transport, 0, n)
		closeClients := func() {
			for _, ctr := range clientTransports {
				ctr.Close()
				ctr.Conn.Close() // the simulated socket and its queue
			}
		}
		// Not one cleanup per client, which would keep them all alive
		// until the end: the heap after they closed would count them.
		t.Cleanup(func() { closeClients() })
		ids := make([]uint64, n)
		for i := range clients {
			sock, err := s.net.Listen(sparseClientAddr(i))
			if err != nil {
				t.Fatal(err)
			}
			ctr := &Transport{Conn: simSocket{sock}}
			clientTransports = append(clientTransports, ctr)
			c, err := ctr.Dial(s.ctx(), ln.Addr(), clientTLS(t), &Config{MaxIdleTimeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			str, err := c.OpenUniStream()
			if err != nil {
				t.Fatal(err)
			}
			clients[i], ids[i] = c, uint64(str.StreamID())
		}
		<-acceptDone
		if len(served) != n {
			t.Fatalf("the server accepted %d of %d connections", len(served), n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		idle, _ := heapInuse()

		for i, c := range clients {
			sendRawFrames(t, c, sparseStreamFrames(ids[i], sparseFrames, 1, sparseGap))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		attacked, _ := heapInuse()
		for _, c := range served {
			if err := context.Cause(c.Context()); err != nil {
				t.Fatalf("a server connection closed under the attack: %v", err)
			}
		}

		for _, c := range clients {
			c.CloseWithError(0, "")
		}
		closeClients()
		time.Sleep(10 * time.Second) // past the server's draining period
		synctest.Wait()
		served, clients, clientTransports = nil, nil, nil
		closed, closedAlloc := heapInuse()

		perConn := (attacked - idle) / int64(n)
		t.Logf("%d connections: HeapInuse %.1f MiB before, %.1f KiB per idle connection (both ends), %.1f KiB more per attacking connection, %.1f MiB after they closed (HeapAlloc %.1f MiB before, %.1f MiB after)",
			n, mib(base), float64(idle-base)/float64(n)/1024, float64(perConn)/1024, mib(closed), mib(baseAlloc), mib(closedAlloc))
		if perConn > 64<<10 {
			t.Errorf("each attacking connection costs %d KiB of heap, want at most 64 KiB", perConn>>10)
		}
	})
}
