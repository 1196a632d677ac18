package quic

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ecnStateOf returns a connection's ECN validation state and CE events.
func ecnStateOf(c *Conn) (ecnState, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ecn.state, c.ecn.ceEvents
}

// receivedECT0 returns how many ECT(0) packets c counted in its
// application data space, as its ACK_ECN frames report them.
func receivedECT0(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ack, _ := c.spaces[spaceApp].tracker.BuildAck(nil, time.Now())
	return ack.ECT0
}

func requireECN(t *testing.T, c *Conn) {
	t.Helper()
	if !c.t.ecn {
		t.Skip("the socket reports no ECN codepoints here")
	}
}

// setTOS sets the IPv4 TOS byte (and so the ECN bits) of everything c sends.
func setTOS(t *testing.T, c *net.UDPConn, tos int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tos) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
}

// udpRelay forwards datagrams between one client and a server through two
// sockets of its own, without their ECN bits (a socket reads them but does
// not send them on).
type udpRelay struct {
	front, back *net.UDPConn
}

func newUDPRelay(t *testing.T, server net.Addr) *udpRelay {
	r := &udpRelay{front: listenUDP(t), back: listenUDP(t)}
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

// TestECNValidated: between our client and our server, and with quic-go's
// client and server, each side's marks are counted by the other and
// validated, so both keep marking.
func TestECNValidated(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	c := dialOurs(t, ctx, srv.addr, nil)
	requireECN(t, c)
	echoOurs(t, ctx, c, 256<<10)
	sc := srv.only(t)
	for _, side := range []struct {
		name string
		c    *Conn
	}{{"our client", c}, {"our server", sc}} {
		if st, _ := ecnStateOf(side.c); st != ecnCapable {
			t.Errorf("%s: ECN state %d, want capable", side.name, st)
		}
		if receivedECT0(side.c) == 0 {
			t.Errorf("%s counted no ECT(0) packet", side.name)
		}
	}

	// quic-go's server counts our marks (our client validates them) and
	// marks its own (we count them).
	addr, err := net.ResolveUDPAddr("udp", quicgoEchoServer(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	qc := dialOurs(t, ctx, addr, nil)
	echoOurs(t, ctx, qc, 256<<10)
	if st, _ := ecnStateOf(qc); st != ecnCapable {
		t.Errorf("our client with quic-go's server: ECN state %d, want capable", st)
	}
	if receivedECT0(qc) == 0 {
		t.Error("quic-go's server sent no ECT(0) packet we counted")
	}

	// quic-go's client against our server, the other way round.
	srv2 := startMigrationServer(t, ctx)
	_, qcl := dialQuicGo(t, ctx, listenUDP(t), srv2.addr)
	echoOver(t, ctx, qcl, 256<<10)
	if st, _ := ecnStateOf(srv2.only(t)); st != ecnCapable {
		t.Errorf("our server with quic-go's client: ECN state %d, want capable", st)
	}
	if receivedECT0(srv2.only(t)) == 0 {
		t.Error("quic-go's client sent no ECT(0) packet we counted")
	}
}

// TestECNBleachedPath: a path that clears the ECN bits (a plain UDP relay)
// makes the peer acknowledge our marked packets without ECN counts: we
// stop marking, and the transfer is unharmed.
func TestECNBleachedPath(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newUDPRelay(t, srv.addr)
	c := dialOurs(t, ctx, relay.front.LocalAddr(), nil)
	requireECN(t, c)
	echoOurs(t, ctx, c, 512<<10)
	if st, _ := ecnStateOf(c); st != ecnFailed {
		t.Errorf("ECN state %d after a bleaching path, want failed", st)
	}
	if st, _ := ecnStateOf(srv.only(t)); st != ecnFailed {
		t.Errorf("server ECN state %d after a bleaching path, want failed", st)
	}
}

// TestECNCongestionExperienced: a path that marks every datagram towards
// the server CE (a congested router with AQM) makes the server report CE
// counts; our client treats them as congestion events, keeps ECN (CE
// counts for marked packets are valid), and the transfer completes.
func TestECNCongestionExperienced(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newUDPRelay(t, srv.addr)
	setTOS(t, relay.back, 3) // the ECN bits CE
	c := dialOurs(t, ctx, relay.front.LocalAddr(), nil)
	requireECN(t, c)
	echoOurs(t, ctx, c, 1<<20)
	st, ce := ecnStateOf(c)
	if st != ecnCapable {
		t.Errorf("ECN state %d with CE marks, want capable", st)
	}
	if ce == 0 {
		t.Error("CE marks caused no congestion event")
	}
	t.Logf("%d congestion events from CE marks", ce)
}

func TestECNDisabled(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	c := dialOurs(t, ctx, srv.addr, &Config{DisableECN: true})
	echoOurs(t, ctx, c, 128<<10)
	if got := receivedECT0(srv.only(t)); got != 0 {
		t.Errorf("the server counted %d ECT(0) packets from a client with ECN disabled", got)
	}
}
