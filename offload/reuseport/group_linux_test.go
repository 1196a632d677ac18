package reuseport

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/netnstest"
)

const hangGuard = 5 * time.Second

// received is one datagram a worker socket read.
type received struct {
	worker int
	tag    uint32
}

// testGroup listens with 4 workers on loopback and reads every socket
// into a channel; it skips without the privilege the program needs.
func testGroup(t *testing.T, mac bool) (*Group, chan received) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: loading the sk_reuseport program needs root (CAP_BPF); CI runs these tests as root")
	}
	g, err := Listen(Config{Addr: "127.0.0.1:0", Workers: 4, IDs: testIDs(t, mac), Fallback: FallbackNone})
	if errors.Is(err, ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("skipping: the kernel refuses the steering program here: %v", err)
	}
	if err != nil {
		t.Fatalf("Listen: %+v", err)
	}
	got := make(chan received, 256)
	var wg sync.WaitGroup
	for i, c := range g.Conns() {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				tag, ok := tagOf(buf[:n])
				if ok {
					got <- received{i, tag}
				}
			}
		})
	}
	t.Cleanup(func() {
		_ = g.Close()
		wg.Wait()
	})
	return g, got
}

// tagOf finds the tag the test packets carry behind their DCID.
func tagOf(p []byte) (uint32, bool) {
	if len(p) < 1 {
		return 0, false
	}
	off := 1 + 11 // short header: DCID of testIDs' 11 bytes
	if p[0]&0x80 != 0 {
		if len(p) < 6 {
			return 0, false
		}
		off = 6 + int(p[5]) + 9
	}
	if len(p) < off+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(p[off:]), true
}

// sender is a client socket on its own loopback port.
func sender(t *testing.T, to net.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, to.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deliver sends p from c and returns the worker that read it.
func deliver(t *testing.T, c *net.UDPConn, got chan received, p []byte) int {
	t.Helper()
	want, _ := tagOf(p)
	if _, err := c.Write(p); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(hangGuard)
	for {
		select {
		case r := <-got:
			if r.tag == want {
				return r.worker
			}
			t.Fatalf("datagram %d arrived, expected %d (one in flight at a time)", r.tag, want)
		case <-timeout:
			t.Fatalf("datagram %d never arrived", want)
		}
	}
}

// TestSteeringOnLoopback sends datagrams from 12 client ports to a group
// of 4 workers: a server ID reaches its worker from every port (migration
// and NAT rebinding keep landing on it), a client's Initial DCID reaches
// the same worker from every port and for its 0-RTT packets, and what is
// not decodable still reaches exactly one worker. The program's counters
// and the Go twin (WorkerFor) agree with where the datagrams went. Then,
// with the program detached, the same server ID is spread over several
// workers by the kernel's 4-tuple hash: steering is what keeps it.
func TestSteeringOnLoopback(t *testing.T) {
	for _, mac := range []bool{true, false} {
		name := "plain-ids"
		if mac {
			name = "mac"
		}
		t.Run(name, func(t *testing.T) {
			g, got := testGroup(t, mac)
			if g.Mode() != ModeSteered || !g.Attached() || g.Workers() != 4 {
				t.Fatalf("mode %v attached %v workers %d", g.Mode(), g.Attached(), g.Workers())
			}
			ids := g.cfg.IDs
			var senders []*net.UDPConn
			for range 12 {
				senders = append(senders, sender(t, g.LocalAddr()))
			}
			tag := uint32(0)
			next := func() uint32 { tag++; return tag }
			var want Stats
			for w := range 4 {
				cid, _ := ids.Append(nil, w)
				for i, s := range senders {
					p := shortHeader(cid, next())
					if i%3 == 0 {
						p = longHeader(2, cid, 80, tag) // a Handshake packet
					}
					if got := deliver(t, s, got, p); got != w || g.WorkerFor(p) != w {
						t.Fatalf("ID of worker %d from port %d: read by %d (WorkerFor %d)", w, i, got, g.WorkerFor(p))
					}
					want.Steered++
				}
			}
			for c := range 8 {
				dcid := []byte{0xc1, byte(c), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
				first := -1
				for i, s := range senders {
					p := longHeader(0, dcid, 1200, next())
					if i%2 == 1 {
						p = longHeader(1, dcid, 300, tag) // its 0-RTT
					}
					w := deliver(t, s, got, p)
					if first == -1 {
						first = w
					}
					if w != first || g.WorkerFor(p) != w {
						t.Fatalf("client DCID %x from port %d: worker %d, first %d (WorkerFor %d)", dcid, i, w, first, g.WorkerFor(p))
					}
					want.Hashed++
				}
			}
			for i, s := range senders {
				deliver(t, s, got, shortHeader(make([]byte, ids.Len()), next()))
				want.Undecodable++
				if i < 3 {
					p := binary.BigEndian.AppendUint32([]byte{0x41, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, next())
					deliver(t, s, got, p) // 16 bytes: too short for the program
					want.Truncated++
				}
			}
			st, err := g.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st != want {
				t.Fatalf("Stats %+v, want %+v", st, want)
			}

			if err := g.Detach(); err != nil || g.Attached() {
				t.Fatalf("Detach: %v", err)
			}
			cid, _ := ids.Append(nil, 1)
			workers := map[int]bool{}
			for _, s := range senders {
				workers[deliver(t, s, got, shortHeader(cid, next()))] = true
			}
			// 12 ports all hashed to one of 4 sockets: 4^-11, about 2e-7.
			if len(workers) < 2 {
				t.Fatalf("detached: 12 client ports all reached worker %v", workers)
			}
			if st2, _ := g.Stats(); st2 != st {
				t.Fatalf("detached program still counted: %+v then %+v", st, st2)
			}
			if err := g.Attach(); err != nil {
				t.Fatal(err)
			}
			if w := deliver(t, senders[0], got, shortHeader(cid, next())); w != 1 {
				t.Fatalf("reattached: worker %d, want 1", w)
			}
		})
	}
}

// TestListenWithoutPrivilege: with no capabilities the program cannot be
// loaded; Listen says so (ErrPermission) with FallbackNone, opens one
// socket with FallbackSingle and four unsteered ones with FallbackPlain.
func TestListenWithoutPrivilege(t *testing.T) {
	netnstest.RequireRoot(t, "dropping capabilities")
	ids := testIDs(t, true)
	err := netnstest.Unprivileged(func() error {
		if _, err := Listen(Config{Addr: "127.0.0.1:0", Workers: 4, IDs: ids, Fallback: FallbackNone}); !errors.Is(err, ErrPermission) {
			return errors.New("FallbackNone: " + errString(err) + ", want ErrPermission")
		}
		for _, c := range []struct {
			fb      Fallback
			mode    Mode
			workers int
		}{{FallbackSingle, ModeSingle, 1}, {FallbackPlain, ModePlain, 4}} {
			g, err := Listen(Config{Addr: "127.0.0.1:0", Workers: 4, IDs: ids, Fallback: c.fb})
			if err != nil {
				return err
			}
			ok := g.Mode() == c.mode && g.Workers() == c.workers && errors.Is(g.Reason(), ErrPermission) && !g.Attached()
			st, _ := g.Stats()
			_ = g.Close()
			if !ok || st != (Stats{}) {
				return errors.New("fallback " + g.Mode().String() + ": unexpected group")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func TestListenErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no IDs":      {Addr: "127.0.0.1:0", Workers: 2},
		"257 workers": {Addr: "127.0.0.1:0", Workers: 257, IDs: testIDs(t, true)},
		"tcp":         {Network: "tcp", Addr: "127.0.0.1:0", IDs: testIDs(t, true)},
		"bad address": {Addr: "256.0.0.1:1", Workers: 2, IDs: testIDs(t, true)},
	} {
		if g, err := Listen(cfg); err == nil {
			g.Close()
			t.Errorf("%s: Listen accepted %+v", name, cfg)
		}
	}
	// A port held by a socket without SO_REUSEPORT cannot join the group.
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if g, err := Listen(Config{Addr: c.LocalAddr().String(), Workers: 2, IDs: testIDs(t, true)}); err == nil {
		g.Close()
		t.Error("Listen joined a port in use")
	}
}

func TestProbe(t *testing.T) {
	netnstest.RequireRoot(t, "loading the steering program")
	if err := Probe(); err != nil {
		t.Fatalf("Probe as root: %v", err)
	}
	err := netnstest.Unprivileged(func() error { return Probe() })
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("Probe without capabilities: %v, want ErrPermission", err)
	}
}
