package quic

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// The memory figures of docs/api.md "Limits" come from TestMemoryFigures:
// a server in this process, its clients in a child process (this test
// binary again, memClientEnv set), so the heap measured is the server's
// alone.

const memClientEnv = "TURBORETRY_QUIC_MEMORY_CLIENT"

func TestMain(m *testing.M) {
	if addr := os.Getenv(memClientEnv); addr != "" {
		os.Exit(memoryClient(addr))
	}
	os.Exit(m.Run())
}

// Sizes of the memory measurement.
const (
	memIdleConns  = 200
	memStreams    = 200
	memSlowWindow = 16 << 10
)

// memoryClient is the child process: at each command line on stdin it
// builds the next load against the server at addr and answers "ready".
// "idle": memIdleConns connections; "streams": one more connection with
// memStreams open streams, each having sent one byte; "slow": one more
// with memStreams streams asking for an endless response that it never
// reads, with 16 KiB stream windows.
func memoryClient(addr string) int {
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	server, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	tr := &Transport{Conn: pc}
	defer tr.Close()
	// The child has no access to the parent's test certificate.
	tlsConf := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{testALPN}}
	dial := func(conf *Config) (*Conn, error) { return tr.Dial(ctx, server, tlsConf, conf) }
	openStreams := func(c *Conn, first byte) error {
		for range memStreams {
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				return err
			}
			if _, err := s.Write([]byte{first}); err != nil {
				return err
			}
		}
		return nil
	}
	for in.Scan() {
		var err error
		switch in.Text() {
		case "idle":
			for range memIdleConns {
				if _, err = dial(&Config{MaxIdleTimeout: time.Minute}); err != nil {
					break
				}
			}
		case "streams":
			var c *Conn
			if c, err = dial(&Config{MaxIdleTimeout: time.Minute}); err == nil {
				err = openStreams(c, 'I')
			}
		case "slow":
			var c *Conn
			conf := &Config{
				MaxIdleTimeout:                 time.Minute,
				InitialStreamReceiveWindow:     memSlowWindow,
				MaxStreamReceiveWindow:         memSlowWindow,
				InitialConnectionReceiveWindow: 2 * memStreams * memSlowWindow,
				MaxConnectionReceiveWindow:     2 * memStreams * memSlowWindow,
			}
			if c, err = dial(conf); err == nil {
				err = openStreams(c, 'S')
			}
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("ready")
	}
	return 0
}

// memoryInUse is the server's live heap plus goroutine stacks after a
// full collection (the client lives in another process).
func memoryInUse() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.StackInuse
}

// endlessResponse is what slow streams are sent: one shared buffer, so the
// figures hold the transport's memory, not a handler's.
var endlessResponse = make([]byte, 32<<10)

// TestMemoryFigures measures the server's memory per idle connection, per
// open stream and per slow-reader stream (a peer with a 16 KiB window that
// never reads while the server writes an endless response), and per
// unvalidated connection (a complete ClientHello from a client that never
// answers), and checks them against bounds. The figures are logged (-v)
// and written into docs/api.md "Limits".
func TestMemoryFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("memory figures need a child process: not in -short")
	}
	const unvalidated = 100
	ctx := testCtx(t)
	pkts, dcids := floodInitials(t, unvalidated)
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), &Config{HandshakeIdleTimeout: time.Minute, MaxIdleTimeout: time.Minute, MaxIncomingStreams: 2 * memStreams})
	if err != nil {
		t.Fatal(err)
	}
	var started atomic.Int64 // streams whose handler has read the first byte
	serveStreams(ctx, ln.Accept, func(s *Stream) {
		var b [1]byte
		_, err := io.ReadFull(s, b[:])
		started.Add(1)
		if err != nil || b[0] != 'S' {
			for err == nil { // an open, idle stream (no reader's buffer)
				_, err = s.Read(b[:])
			}
			return
		}
		for {
			if _, err := s.Write(endlessResponse); err != nil {
				return
			}
		}
	})
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), memClientEnv+"="+ln.Addr().String())
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = child.Wait() })
	answers := bufio.NewScanner(stdout)
	step := func(cmd string, done func() bool) (heap, stacks uint64) {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, cmd); err != nil {
			t.Fatal(err)
		}
		if !answers.Scan() || answers.Text() != "ready" {
			t.Fatalf("client %s: %q %v", cmd, answers.Text(), answers.Err())
		}
		waitFor(t, cmd+" load in place", done)
		return memoryInUse()
	}
	// A stream is in place once its handler read the first byte: the
	// buffer chunk that byte arrived in is free again.
	streamsOpen := func(n int) func() bool { return func() bool { return started.Load() == int64(n) } }
	h0, s0 := memoryInUse()
	h1, s1 := step("idle", func() bool { st := tr.Stats(); return st.Connections == memIdleConns && st.Handshaking == 0 })
	h2, s2 := step("streams", streamsOpen(memStreams))
	h3, s3 := step("slow", func() bool {
		return streamsOpen(2*memStreams)() && streamsAtCredit(tr) == memStreams && tr.Stats().SendBuffered == 0
	})
	attacker := listenUDP(t)
	sendFlood(t, attacker, ln.Addr(), pkts, readFloodAnswers(attacker, dcids))
	if st := tr.Stats(); st.Unvalidated != unvalidated {
		t.Fatalf("%d unvalidated connections, want %d", st.Unvalidated, unvalidated)
	}
	h4, s4 := memoryInUse()

	per := func(a, b uint64, n int) float64 { return float64(int64(b)-int64(a)) / float64(n) / 1024 }
	idleHeap, idleStack := per(h0, h1, memIdleConns), per(s0, s1, memIdleConns)
	streamHeap, streamStack := per(h1, h2, memStreams), per(s1, s2, memStreams)
	slowHeap, slowStack := per(h2, h3, memStreams), per(s2, s3, memStreams)
	t.Logf("server memory per idle connection: heap %.1f KiB, stacks %.1f KiB", idleHeap, idleStack)
	t.Logf("server memory per open stream: heap %.1f KiB, stacks %.1f KiB (a handler goroutine each)", streamHeap, streamStack)
	t.Logf("server memory per slow-reader stream: heap %.1f KiB, stacks %.1f KiB", slowHeap, slowStack)
	unvHeap, unvStack := per(h3, h4, unvalidated), per(s3, s4, unvalidated)
	t.Logf("server memory per unvalidated connection: heap %.1f KiB, stacks %.1f KiB (estimate used: %d KiB + buffers, %.1f KiB on average)",
		unvHeap, unvStack, unvalidatedBaseCost>>10, float64(tr.Stats().UnvalidatedBytes)/unvalidated/1024)
	if idleHeap > 64 || streamHeap > 8 || slowHeap > 48 || unvHeap > 96 {
		t.Errorf("per idle connection %.1f KiB (want <= 64), per open stream %.1f KiB (<= 8), per slow-reader stream %.1f KiB (<= 48), per unvalidated connection %.1f KiB (<= 96)",
			idleHeap, streamHeap, slowHeap, unvHeap)
	}
}
