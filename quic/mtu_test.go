package quic

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// maxDatagramOf returns the datagram size a connection uses.
func maxDatagramOf(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxDatagram
}

// sizeRelay forwards datagrams between one client and a server, dropping
// those longer than limit bytes (0: none) in both directions, as a path
// with a narrow link would.
type sizeRelay struct {
	front, back *net.UDPConn
	limit       atomic.Int64
	dropped     atomic.Int64
}

func newSizeRelay(t *testing.T, server net.Addr, limit int) *sizeRelay {
	r := &sizeRelay{front: listenUDP(t), back: listenUDP(t)}
	r.limit.Store(int64(limit))
	var client atomic.Pointer[net.Addr]
	forward := func(from, to *net.UDPConn, dst func() net.Addr, learn bool) {
		b := make([]byte, 4096)
		for {
			n, addr, err := from.ReadFrom(b)
			if err != nil {
				return
			}
			if learn {
				client.Store(&addr)
			}
			if l := r.limit.Load(); l > 0 && int64(n) > l {
				r.dropped.Add(1)
				continue
			}
			if d := dst(); d != nil {
				_, _ = to.WriteTo(b[:n], d)
			}
		}
	}
	go forward(r.front, r.back, func() net.Addr { return server }, true)
	go forward(r.back, r.front, func() net.Addr {
		if a := client.Load(); a != nil {
			return *a
		}
		return nil
	}, false)
	return r
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

func TestMTUDiscoveryReachesFullSize(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	c := dialOurs(t, ctx, srv.addr, nil)
	if !c.t.df {
		t.Skip("the socket does not set don't-fragment here: no path MTU discovery")
	}
	echoOurs(t, ctx, c, 256<<10)
	waitFor(t, "the client's datagrams to grow to the probe cap", func() bool { return maxDatagramOf(c) == maxProbeSize })
	waitFor(t, "the server's datagrams to grow", func() bool { return maxDatagramOf(srv.only(t)) == maxProbeSize })
	if cw := c.ConnectionStats().CongestionWindow; cw < 10*maxProbeSize {
		t.Errorf("congestion window %d after the size change", cw)
	}
	echoOurs(t, ctx, c, 1<<20)
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
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newSizeRelay(t, srv.addr, 1300)
	c := dialOurs(t, ctx, relay.front.LocalAddr(), nil)
	if !c.t.df {
		t.Skip("the socket does not set don't-fragment here: no path MTU discovery")
	}
	echoOurs(t, ctx, c, 1<<20)
	inRange := func(n int) bool { return n > 1300-mtuSearchDone && n <= 1300 }
	waitFor(t, "both sides to settle below 1300 bytes", func() bool {
		return inRange(maxDatagramOf(c)) && inRange(maxDatagramOf(srv.only(t)))
	})
	if relay.dropped.Load() == 0 {
		t.Error("no probe was too large for the link")
	}
	echoOurs(t, ctx, c, 1<<20)
	// A burst of congestion losses may look like a black hole for a
	// moment; the size that failed is retested at once.
	waitFor(t, "the client to stay just below 1300 bytes", func() bool { return inRange(maxDatagramOf(c)) })
}

// TestMTUBlackHoleFallsBack: after both sides moved to 1452-byte datagrams
// the link starts dropping everything above 1300 bytes; the transfer in
// progress still completes, and both sides settle below the new limit.
func TestMTUBlackHoleFallsBack(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newSizeRelay(t, srv.addr, 0)
	c := dialOurs(t, ctx, relay.front.LocalAddr(), &Config{MaxIdleTimeout: 20 * time.Second})
	if !c.t.df {
		t.Skip("the socket does not set don't-fragment here: no path MTU discovery")
	}
	echoOurs(t, ctx, c, 256<<10)
	waitFor(t, "both sides at full size", func() bool {
		return maxDatagramOf(c) == maxProbeSize && maxDatagramOf(srv.only(t)) == maxProbeSize
	})
	relay.limit.Store(1300)
	echoOurs(t, ctx, c, 2<<20)
	waitFor(t, "both sides below the new limit", func() bool {
		return maxDatagramOf(c) <= 1300 && maxDatagramOf(srv.only(t)) <= 1300
	})
}

func TestMTUDiscoveryDisabled(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	c := dialOurs(t, ctx, srv.addr, &Config{DisablePathMTUDiscovery: true})
	echoOurs(t, ctx, c, 512<<10)
	if n := maxDatagramOf(c); n != maxPacketSize {
		t.Errorf("datagrams grew to %d bytes with discovery disabled", n)
	}
}
