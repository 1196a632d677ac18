package quic

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
)

// The deterministic connection harness (docs/testing.md): a test runs in a
// synctest bubble, its endpoints talk over an in-memory simnet.Network, and
// every timer (PTO, idle, keep-alive, path validation, MTU probing) runs in
// virtual time, so the outcome does not depend on the machine's load and
// waiting costs nothing.

// Addresses of the harness: the server, and clients numbered from 1.
var simServerAddr = netip.MustParseAddrPort("198.18.0.1:443")

func simClientAddr(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 1, byte(i)}), 4000)
}

// simPrefixAddr is a client address in source prefix number prefix (a
// /24 of 100.64.0.0/10, prefix < 16384), host number host within it:
// simClientAddr's are all in one /24, which admission by source prefix
// counts as one.
func simPrefixAddr(prefix, host int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{100, 64 + byte(prefix>>8), byte(prefix), byte(host)}), 4000)
}

// sim is one harness test's network.
type sim struct {
	t   *testing.T
	net *simnet.Network

	mu   sync.Mutex
	taps []func(*simnet.Packet) bool
}

func newSim(t *testing.T, link simnet.LinkConfig) *sim {
	s := &sim{t: t, net: simnet.New(1, link)}
	s.net.SetFilter(func(p *simnet.Packet) bool {
		s.mu.Lock()
		taps := s.taps
		s.mu.Unlock()
		for _, f := range taps {
			if !f(p) {
				return false
			}
		}
		return true
	})
	return s
}

// tap adds f to the functions that see every datagram written, in the
// order added, as simnet.Network.SetFilter describes; the first that
// returns false drops the datagram.
func (s *sim) tap(f func(p *simnet.Packet) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taps = append(s.taps[:len(s.taps):len(s.taps)], f)
}

// simTest runs f in a synctest bubble with a fresh network whose links
// behave as link. After f and its cleanups (which close every Transport
// the harness made) it fails the test if any goroutine of this package is
// left in the bubble, and waits for the others (quic-go's, the test's) to
// end in virtual time.
func simTest(t *testing.T, link simnet.LinkConfig, f func(t *testing.T, s *sim)) {
	t.Helper()
	t.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true") // a simnet endpoint has no buffer to size
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		t.Cleanup(func() { checkBubbleDrained(t) })
		t.Cleanup(func() { close(done) })
		go watchdog(done)
		f(t, newSim(t, link))
	})
}

// simTimeLimit bounds a harness test in virtual time. A test stuck while
// some timer keeps firing (a keep-alive, a PTO) would otherwise advance
// the virtual clock forever and never end.
const simTimeLimit = 10 * time.Minute

// watchdog crashes the test binary with every goroutine's stack if the
// bubble's clock passes simTimeLimit before done closes.
func watchdog(done <-chan struct{}) {
	t := time.NewTimer(simTimeLimit)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("harness test still running after %v of virtual time: stuck\n\n%s", simTimeLimit, buf))
	}
}

// simSocket is a simnet endpoint that tells the Transport its datagrams
// are never fragmented, as a UDP socket with IP_PMTUDISC_DO would.
type simSocket struct{ *simnet.Conn }

func (simSocket) dontFragment() bool { return true }

// socket returns an endpoint at addr, closed when the test ends.
func (s *sim) socket(addr netip.AddrPort) simSocket {
	s.t.Helper()
	c, err := s.net.Listen(addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return simSocket{c}
}

// transport returns a Transport on a new endpoint at addr, closed when the
// test ends.
func (s *sim) transport(addr netip.AddrPort) *Transport {
	tr := &Transport{Conn: s.socket(addr)}
	s.t.Cleanup(func() { tr.Close() })
	return tr
}

// listen returns a Listener with conf on a Transport at simServerAddr,
// both closed when the test ends.
func (s *sim) listen(conf *Config) *Listener {
	s.t.Helper()
	ln, err := s.transport(simServerAddr).Listen(serverTLS(s.t), conf)
	if err != nil {
		s.t.Fatal(err)
	}
	return ln
}

// server starts an echo server at simServerAddr, until the test ends; tr,
// if not nil, is the Transport to listen on (for its options), its Conn
// filled in.
func (s *sim) server(tr *Transport, conf *Config) *echoServer {
	s.t.Helper()
	if tr == nil {
		tr = &Transport{}
	}
	tr.Conn = s.socket(simServerAddr)
	s.t.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	return serveEcho(s.t, ctx, tr, conf)
}

// dial connects our client from a new endpoint at from to to.
func (s *sim) dial(from netip.AddrPort, to net.Addr, conf *Config) *Conn {
	s.t.Helper()
	return s.dialTLS(from, to, clientTLS(s.t), conf)
}

// dialTLS is dial with the client's TLS configuration.
func (s *sim) dialTLS(from netip.AddrPort, to net.Addr, ctls *tls.Config, conf *Config) *Conn {
	s.t.Helper()
	c, err := s.transport(from).Dial(s.ctx(), to, ctls, conf)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.CloseWithError(0, "") })
	return c
}

// dialQuicGo connects quic-go's client from a new endpoint at from to to.
func (s *sim) dialQuicGo(from netip.AddrPort, to net.Addr) (*quicgo.Transport, *quicgo.Conn) {
	s.t.Helper()
	tr := &quicgo.Transport{Conn: s.socket(from).Conn}
	s.t.Cleanup(func() { tr.Close() })
	c, err := tr.Dial(s.ctx(), to, clientTLS(s.t), &quicgo.Config{MaxIdleTimeout: 20 * time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.CloseWithError(0, "") })
	return tr, c
}

// peerServer starts the echo server of peer ("ours" or "quic-go") with
// default options and returns its address.
func (s *sim) peerServer(peer string) net.Addr {
	s.t.Helper()
	if peer == "ours" {
		return s.server(nil, nil).addr
	}
	return s.quicGoServer(&quicgo.Config{})
}

// quicGoServer starts quic-go's echo server at simServerAddr, until the
// test ends, and returns its address.
func (s *sim) quicGoServer(conf *quicgo.Config) net.Addr {
	s.t.Helper()
	tr := &quicgo.Transport{Conn: s.socket(simServerAddr).Conn}
	s.t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(s.t), conf)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	serveStreams(ctx, ln.Accept, func(st *quicgo.Stream) { echo(st) })
	return ln.Addr()
}

// ctx is a hang guard in virtual time: it ends only if the test is stuck
// (every goroutine waits on a timer), never because the machine is slow.
func (s *sim) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s.t.Cleanup(cancel)
	return ctx
}

// checkBubbleDrained fails t for goroutines of this package left in the
// calling synctest bubble once everything settled, and gives the others
// (quic-go's, which winds down on timers) up to a virtual minute.
func checkBubbleDrained(t *testing.T) {
	t.Helper()
	synctest.Wait()
	if left := bubbleGoroutines("turboretry/quic.(*"); len(left) > 0 {
		t.Errorf("%d goroutines of the quic package left after everything was closed:\n\n%s", len(left), strings.Join(left, "\n\n"))
		return
	}
	for range 60 {
		if len(bubbleGoroutines("")) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	left := bubbleGoroutines("")
	t.Errorf("%d goroutines left a virtual minute after everything was closed:\n\n%s", len(left), strings.Join(left, "\n\n"))
}

// bubbleGoroutines returns the stacks of the goroutines in the caller's
// synctest bubble other than the caller and synctest's own, keeping those
// that mention match.
func bubbleGoroutines(match string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	// The first stack is the caller's; its header names the bubble.
	_, bubble, ok := strings.Cut(strings.SplitN(stacks[0], "\n", 2)[0], "synctest bubble ")
	if !ok {
		panic("bubbleGoroutines called outside a synctest bubble")
	}
	var left []string
	for _, st := range stacks[1:] {
		header := strings.SplitN(st, "\n", 2)[0]
		if !strings.Contains(header, "synctest bubble "+bubble) ||
			strings.Contains(st, "testing/synctest.testingSynctestTest") || strings.Contains(st, "internal/synctest.Run(") {
			continue
		}
		if bytes.Contains([]byte(st), []byte(match)) {
			left = append(left, st)
		}
	}
	return left
}

// TestHarnessEcho: the harness carries a handshake and a transfer in
// virtual time, at the round trip the link's delay makes.
func TestHarnessEcho(t *testing.T) {
	simTest(t, simnet.LinkConfig{Delay: 10 * time.Millisecond}, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		start := time.Now()
		c := s.dial(simClientAddr(1), srv.addr, nil)
		if took := time.Since(start); took != 20*time.Millisecond {
			t.Errorf("the handshake took %v, want one 20 ms round trip", took)
		}
		echoOurs(t, s.ctx(), c, 100<<10)
		if rtt := c.ConnectionStats().MinRTT; rtt != 20*time.Millisecond {
			t.Errorf("minimum RTT %v, want 20ms", rtt)
		}
	})
}

// TestHarnessSeesLeftGoroutines: the check run after every harness test
// finds a Transport's and a connection's goroutines while they run, and
// neither once the Transport is closed.
func TestHarnessSeesLeftGoroutines(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		tr := &Transport{Conn: s.socket(simClientAddr(1))}
		c, err := tr.Dial(s.ctx(), srv.addr, clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Stack frames show the receiver: these two goroutines are ours.
		ours := []string{fmt.Sprintf("quic.(*Transport).readLoop(%p", tr), fmt.Sprintf("quic.(*Conn).run(%p", c)}
		find := func() (found []string) {
			synctest.Wait()
			left := strings.Join(bubbleGoroutines("turboretry/quic.(*"), "\n")
			for _, f := range ours {
				if strings.Contains(left, f) {
					found = append(found, f)
				}
			}
			return found
		}
		if found := find(); len(found) != 2 {
			t.Errorf("found %q of %q", found, ours)
		}
		tr.Close()
		if found := find(); len(found) != 0 {
			t.Errorf("%q left after the Transport closed", found)
		}
	})
}
