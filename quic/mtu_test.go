package quic

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

// maxDatagramOf returns the datagram size a connection uses.
func maxDatagramOf(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.send.maxDatagram
}

// dialOurs dials addr from a fresh socket with our client.
func dialOurs(t *testing.T, ctx context.Context, addr net.Addr, conf *Config) *Conn {
	t.Helper()
	c, err := Dial(ctx, listenUDP(t), addr, clientTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	return c
}

// withMTU returns simLink with datagrams above mtu dropped.
func withMTU(mtu int) simnet.LinkConfig {
	l := simLink
	l.MTU = mtu
	return l
}

func TestMTUDiscoveryReachesFullSize(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 256<<10)
		waitFor(t, "the client's datagrams to grow to the probe cap", func() bool { return maxDatagramOf(c) == maxProbeSize })
		waitFor(t, "the server's datagrams to grow", func() bool { return maxDatagramOf(srv.only(t)) == maxProbeSize })
		if cw := c.ConnectionStats().CongestionWindow; cw < 10*maxProbeSize {
			t.Errorf("congestion window %d after the size change", cw)
		}
		echoOurs(t, ctx, c, 1<<20)
	})
}

// TestMTUDiscoveryQuicGoPeers: quic-go's server acknowledges our probes,
// and our server's probes to quic-go's client are acknowledged too.
func TestMTUDiscoveryQuicGoPeers(t *testing.T) {
	ctx := testCtx(t)
	addr, err := net.ResolveUDPAddr("udp", quicgoEchoServer(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	c := dialOurs(t, ctx, addr, nil)
	if !c.t.df {
		t.Skip("the socket does not set don't-fragment here: no path MTU discovery")
	}
	echoOurs(t, ctx, c, 256<<10)
	waitFor(t, "our client's datagrams to quic-go's server to grow", func() bool { return maxDatagramOf(c) == maxProbeSize })

	srv := startMigrationServer(t, ctx)
	_, qc := dialQuicGo(t, ctx, listenUDP(t), srv.addr)
	echoOver(t, ctx, qc, 256<<10)
	waitFor(t, "our server's datagrams to quic-go's client to grow", func() bool { return maxDatagramOf(srv.only(t)) == maxProbeSize })
}

// TestMTUDiscoveryNarrowPath: a link that drops datagrams above 1300 bytes
// leaves both sides just below it, and the transfer is unharmed.
func TestMTUDiscoveryNarrowPath(t *testing.T) {
	simTest(t, withMTU(1300), func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 512<<10)
		inRange := func(n int) bool { return n > 1300-mtuSearchDone && n <= 1300 }
		waitFor(t, "both sides to settle below 1300 bytes", func() bool {
			return inRange(maxDatagramOf(c)) && inRange(maxDatagramOf(srv.only(t)))
		})
		if s.net.Stats().TooBig == 0 {
			t.Error("no probe was too large for the link")
		}
		echoOurs(t, ctx, c, 512<<10)
		if !inRange(maxDatagramOf(c)) || !inRange(maxDatagramOf(srv.only(t))) {
			t.Errorf("after another transfer the sizes are %d and %d", maxDatagramOf(c), maxDatagramOf(srv.only(t)))
		}
	})
}

// TestMTUBlackHoleFallsBack: after both sides moved to 1452-byte datagrams
// the link starts dropping everything above 1300 bytes; the transfer in
// progress still completes, and both sides settle below the new limit.
func TestMTUBlackHoleFallsBack(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, &Config{MaxIdleTimeout: 20 * time.Second})
		echoOurs(t, ctx, c, 256<<10)
		waitFor(t, "both sides at full size", func() bool {
			return maxDatagramOf(c) == maxProbeSize && maxDatagramOf(srv.only(t)) == maxProbeSize
		})
		s.net.SetPath(simClientAddr(1).Addr(), simServerAddr.Addr(), withMTU(1300))
		echoOurs(t, ctx, c, 1<<20)
		waitFor(t, "both sides below the new limit", func() bool {
			return maxDatagramOf(c) <= 1300 && maxDatagramOf(srv.only(t)) <= 1300
		})
		if s.net.Stats().TooBig == 0 {
			t.Error("the link dropped nothing")
		}
	})
}

func TestMTUDiscoveryDisabled(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, &Config{DisablePathMTUDiscovery: true})
		var largest atomic.Int64
		s.tap(func(p *simnet.Packet) bool {
			if p.From == simClientAddr(1) && int64(len(p.Data)) > largest.Load() {
				largest.Store(int64(len(p.Data))) // one writer: the client's goroutine
			}
			return true
		})
		echoOurs(t, s.ctx(), c, 512<<10)
		if n := maxDatagramOf(c); n != maxPacketSize || largest.Load() != maxPacketSize {
			t.Errorf("datagrams grew to %d bytes (%d on the wire) with discovery disabled", n, largest.Load())
		}
	})
}

// TestMTUFirstProbeWaitsAPTO: a connection that is done within a PTO of
// handshake confirmation sends no path MTU probe; the search runs after.
func TestMTUFirstProbeWaitsAPTO(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		client := simClientAddr(1)
		var mu sync.Mutex
		largest := 0
		s.tap(func(p *simnet.Packet) bool {
			if p.From == client {
				mu.Lock()
				largest = max(largest, len(p.Data))
				mu.Unlock()
			}
			return true
		})
		srv := s.server(nil, nil)
		c := s.dial(client, srv.addr, nil)
		confirmed := func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.hs.confirmed
		}
		waitFor(t, "handshake confirmation", confirmed)
		c.mu.Lock()
		pto := c.loss.pto()
		c.mu.Unlock()
		start := time.Now()
		echoOurs(t, s.ctx(), c, 1000)
		time.Sleep(time.Until(start.Add(pto / 2)))
		mu.Lock()
		early := largest
		mu.Unlock()
		if early > c.baseDatagram {
			t.Errorf("a %d-byte datagram within half a PTO (%v) of confirmation", early, pto)
		}
		waitFor(t, "the client's datagrams to grow to the probe cap", func() bool { return maxDatagramOf(c) == maxProbeSize })
	})
}

// TestMTUDiscoveryProbeLostOnce: on a link that carries 1400 bytes, the
// client's first probe that fits (1326 bytes, after 1452 failed) is lost,
// as congestion would lose it. The size is probed again rather than taken
// for the limit, and the search still ends within mtuSearchDone of 1400.
func TestMTUDiscoveryProbeLostOnce(t *testing.T) {
	simTest(t, withMTU(1400), func(t *testing.T, s *sim) {
		client := simClientAddr(1)
		var dropped atomic.Bool
		s.tap(func(p *simnet.Packet) bool {
			return p.From != client || len(p.Data) != 1326 || !dropped.CompareAndSwap(false, true)
		})
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(client, srv.addr, nil)
		echoOurs(t, ctx, c, 512<<10)
		waitFor(t, "the client's search to end", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.mtu.started && c.mtu.high-c.mtu.low <= mtuSearchDone
		})
		if !dropped.Load() {
			t.Fatal("no 1326-byte probe was sent")
		}
		if n := maxDatagramOf(c); n <= 1400-mtuSearchDone || n > 1400 {
			t.Errorf("the client settled at %d bytes, want within %d below 1400", n, mtuSearchDone)
		}
	})
}
