package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	quicgo "github.com/quic-go/quic-go"
	gsimnet "github.com/quic-go/quic-go/testutils/simnet"

	"github.com/turboretry/turboretry/internal/qerr"
)

// Regression tests for the quic-go semantics of issue 15 (defect 4).

// Listener.Close lets Accept hand out the connections already queued, which
// stay open on both sides, then returns ErrServerClosed.
func TestListenerCloseDrainsAcceptQueue(t *testing.T) {
	ctx := testCtx(t)
	ln, err := Listen(listenUDP(t), serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var clients []*Conn
	for range n {
		c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		clients = append(clients, c)
	}
	// A client's handshake completes before the server's: wait until the
	// server queued all three.
	for ln.s.t.Stats().AcceptQueue < n {
		select {
		case <-ctx.Done():
			t.Fatal("connections not queued")
		case <-time.After(time.Millisecond):
		}
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c, err := ln.Accept(ctx)
		if err != nil {
			t.Fatalf("Accept %d after Close: %v", i, err)
		}
		if err := c.Context().Err(); err != nil {
			t.Fatalf("queued connection %d closed: %v", i, err)
		}
		// The connection works after Close.
		writeOnNewStream(t, c.OpenStream, []byte("after close"))
	}
	for _, c := range clients {
		s, err := c.AcceptStream(ctx)
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		if got, err := io.ReadAll(s); err != nil || string(got) != "after close" {
			t.Fatalf("client read %q, %v", got, err)
		}
	}
	if _, err := ln.Accept(ctx); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Accept after the queue drained: %v", err)
	}
}

// Errors at the API are *quic.TransportError, never the internal type, and
// a certificate that does not verify stays reachable as
// *tls.CertificateVerificationError, with our server and quic-go's.
func TestTransportErrorsArePublic(t *testing.T) {
	ctx := testCtx(t)
	ours, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	theirs, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	for name, addr := range map[string]string{"our server": ours.Addr().String(), "quic-go server": theirs.Addr().String()} {
		conf := clientTLS(t)
		conf.ServerName = "foo.bar"
		_, err := DialAddr(ctx, addr, conf, nil)
		var te *TransportError
		var cve *tls.CertificateVerificationError
		var internal *qerr.TransportError
		if !errors.As(err, &te) || !te.ErrorCode.IsCryptoError() || !errors.As(err, &cve) || errors.As(err, &internal) {
			t.Fatalf("%s, wrong name: %v (%T)", name, err, err)
		}
		if !strings.Contains(err.Error(), "not foo.bar") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// A configuration crypto/tls refuses before sending anything.
	conf := clientTLS(t)
	conf.NextProtos = []string{strings.Repeat("x", 256)}
	_, err = DialAddr(ctx, ours.Addr().String(), conf, nil)
	var te *TransportError
	var internal *qerr.TransportError
	if !errors.As(err, &te) || errors.As(err, &internal) {
		t.Fatalf("invalid NextProtos: %v (%T)", err, err)
	}
	// A TLS alert from the peer names the alert, as quic-go's errors do.
	conf = clientTLS(t)
	conf.NextProtos = []string{"foobar"}
	if _, err := DialAddr(ctx, ours.Addr().String(), conf, nil); err == nil || !strings.Contains(err.Error(), "no application protocol") {
		t.Fatalf("ALPN mismatch: %v", err)
	}
}

// ConnectionState.SupportsDatagrams.Remote says what the peer advertised,
// even when our own datagram support is off (quic-go's semantics).
func TestSupportsDatagramsRemote(t *testing.T) {
	ctx := testCtx(t)
	for _, serverOn := range []bool{true, false} {
		ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{EnableDatagrams: serverOn})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{EnableDatagrams: !serverOn})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		sc, err := ln.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs, ss := c.ConnectionState().SupportsDatagrams, sc.ConnectionState().SupportsDatagrams
		if cs.Local != !serverOn || cs.Remote != serverOn || ss.Local != serverOn || ss.Remote != !serverOn {
			t.Fatalf("server datagrams %v: client %+v, server %+v", serverOn, cs, ss)
		}
	}
	// quic-go's client with datagrams on, ours off.
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	qc, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := sc.ConnectionState().SupportsDatagrams; st.Local || !st.Remote {
		t.Fatalf("quic-go client with datagrams: %+v", st)
	}
}

// Plain Dial never sends 0-RTT, even resuming a ticket that allows it
// (quic-go's semantics); DialEarly does.
func TestPlainDialUsesNo0RTT(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		tr := s.serverTransport(nil)
		_, res := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
		// While the server's Handshake packets are held, the client cannot
		// complete the handshake, so the early dial's stream data can only
		// go out as 0-RTT (whatever the scheduling).
		hold := s.holdHandshake(simServerAddr)
		ctls, cache := resumingClientTLS(t)
		ctr := s.transport(simClientAddr(1))
		msg := []byte("hello")
		for i, early := range []bool{false, false, true} {
			dial := ctr.Dial
			if early {
				dial = ctr.DialEarly
				hold.hold()
			}
			c, err := dial(ctx, tr.Conn.LocalAddr(), ctls, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := writeOnNewStream(t, c.OpenStream, msg)
			r := recvResult(t, ctx, res)
			hold.release()
			if got, err := io.ReadAll(st); err != nil || string(got) != string(msg) {
				t.Fatalf("dial %d: echo %q, %v", i, got, err)
			}
			if c.ConnectionState().Used0RTT != early || r.used0RTT != early || (r.packets0RTT > 0) != early {
				t.Fatalf("dial %d: Used0RTT %v (server %v, %d 0-RTT packets), want %v", i, c.ConnectionState().Used0RTT, r.used0RTT, r.packets0RTT, early)
			}
			if i == 0 {
				waitSignal(t, ctx, cache.put, "session ticket")
			} else if !c.ConnectionState().TLS.DidResume {
				t.Fatalf("dial %d did not resume", i)
			}
			_ = c.CloseWithError(0, "")
		}
	})
}

// Listener.Close refuses handshakes in progress at once: the server sends
// no more of its handshake, and the client fails with CONNECTION_REFUSED.
func TestListenerCloseRefusesHandshakes(t *testing.T) {
	ctx := testCtx(t)
	inHandshake, release := make(chan struct{}), make(chan struct{})
	base := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		close(inHandshake)
		<-release
		return serverTLS(t), nil
	}}
	ln, err := ListenAddr("127.0.0.1:0", base, nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
		errc <- err
	}()
	<-inHandshake
	closed := make(chan error, 1)
	go func() { closed <- ln.Close() }()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	close(release)
	err = <-errc
	var te *TransportError
	if !errors.As(err, &te) || te.ErrorCode != ConnectionRefused || !te.Remote {
		t.Fatalf("dial during Close: %v, want a remote CONNECTION_REFUSED", err)
	}
}

type failingPacketConn struct {
	net.PacketConn
	fail chan struct{}
	err  error
}

func (c *failingPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	<-c.fail
	return 0, nil, c.err
}

// A socket that fails for good closes the Transport with its error, which
// the calls and connections on it report, wrapped in ErrTransportClosed.
func TestTransportClosesOnSocketError(t *testing.T) {
	ctx := testCtx(t)
	boom := errors.New("socket broke")
	pc := &failingPacketConn{PacketConn: listenUDP(t), fail: make(chan struct{}), err: boom}
	tr := &Transport{Conn: pc}
	defer tr.Close()
	silent := listenUDP(t)
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Dial(ctx, silent.LocalAddr(), clientTLS(t), nil)
		errc <- err
	}()
	close(pc.fail)
	for _, err := range []error{<-errc, func() error { _, err := tr.Dial(ctx, silent.LocalAddr(), &tls.Config{}, nil); return err }(),
		func() error { _, err := tr.Listen(&tls.Config{}, nil); return err }()} {
		if !errors.Is(err, ErrTransportClosed) || !errors.Is(err, boom) {
			t.Fatalf("got %v, want ErrTransportClosed with the socket's error", err)
		}
	}
}

// A handshake refused because its listener closed keeps no closing period
// (in virtual time): its connection IDs are released at once, so the
// Transport of ListenAddr, and its socket, close without waiting three
// PTOs (three seconds before an RTT sample; quic-go's test wants the
// socket closed within one).
func TestRefusedAtCloseReleasedAtOnce(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		inHandshake, release := make(chan struct{}), make(chan struct{})
		base := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			close(inHandshake)
			<-release
			return serverTLS(t), nil
		}}
		str := s.transport(simServerAddr)
		ln, err := str.Listen(base, nil)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := s.transport(simClientAddr(1)).Dial(s.ctx(), net.UDPAddrFromAddrPort(simServerAddr), clientTLS(t), nil)
			errc <- err
		}()
		<-inHandshake
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		closedAt := time.Now()
		close(release)
		var te *TransportError
		if err := <-errc; !errors.As(err, &te) || te.ErrorCode != ConnectionRefused {
			t.Fatalf("dial during Close: %v, want CONNECTION_REFUSED", err)
		}
		synctest.Wait()
		str.mu.Lock()
		left := len(str.handlers)
		str.mu.Unlock()
		if left != 0 {
			t.Errorf("%d connection IDs still routed %v after the refusal", left, time.Since(closedAt))
		}
	})
}

// Closing needs no clock: a synctest bubble's time stops once its test
// function returns, and quic-go's tests return right after their deferred
// Close calls (quic-go's TestConnectionCloseRetransmission, on quic-go's
// simnet). A connection of Dial that closes while its peer is silent, and
// a Transport with its connections, must end without a timer firing, or
// the bubble reports a deadlock (the test binary panics).
func TestCloseNeedsNoClock(t *testing.T) {
	t.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	synctest.Test(t, func(t *testing.T) {
		serverAddr := &net.UDPAddr{IP: net.IPv4(198, 18, 0, 1), Port: 443}
		var drop atomic.Bool
		n := &gsimnet.Simnet{Router: &silentServerRouter{server: serverAddr.String(), drop: &drop}}
		link := gsimnet.NodeBiDiLinkSettings{Latency: 5 * time.Millisecond}
		client := n.NewEndpoint(&net.UDPAddr{IP: net.IPv4(198, 18, 1, 1), Port: 4000}, link)
		server := n.NewEndpoint(serverAddr, link)
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		tr := &Transport{Conn: server}
		defer tr.Close()
		ln, err := tr.Listen(serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := Dial(ctx, client, ln.Addr(), clientTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		sc, err := ln.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The server goes away silently (its CONNECTION_CLOSE is lost)
		// while the client has data in flight.
		drop.Store(true)
		_ = sc.CloseWithError(1, "bye")
		for range 10 {
			st, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Write([]byte("data in flight")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Nanosecond)
		}
	})
}

// silentServerRouter drops the server's datagrams once drop is set.
type silentServerRouter struct {
	gsimnet.PerfectRouter
	server string
	drop   *atomic.Bool
}

func (r *silentServerRouter) SendPacket(p gsimnet.Packet) error {
	if r.drop.Load() && p.From.String() == r.server {
		return nil
	}
	return r.PerfectRouter.SendPacket(p)
}

// smallPathConn is a socket whose path carries no datagram above 1200
// bytes: larger writes fail with EMSGSIZE, as on a link with a small MTU.
type smallPathConn struct{ *net.UDPConn }

func (c smallPathConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (int, int, error) {
	if len(b) > 1200 {
		return 0, 0, syscall.EMSGSIZE
	}
	return c.UDPConn.WriteMsgUDP(b, oob, addr)
}

// A path that cannot carry Config.InitialPacketSize fails the dial with
// the socket's error at once (quic-go's semantics), instead of retrying
// until the handshake times out; the default size, 1200, gets through.
func TestInitialPacketSizeTooLargeForPath(t *testing.T) {
	ctx := testCtx(t)
	ln, err := Listen(smallPathConn{listenUDP(t)}, serverTLS(t), &Config{DisablePathMTUDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, size := range []uint16{0, 1280} {
		conf := &Config{InitialPacketSize: size, DisablePathMTUDiscovery: true}
		c, err := Dial(ctx, smallPathConn{listenUDP(t)}, ln.Addr(), clientTLS(t), conf)
		if size == 0 {
			if err != nil {
				t.Fatalf("default size: %v", err)
			}
			_ = c.CloseWithError(0, "")
			continue
		}
		if !errors.Is(err, syscall.EMSGSIZE) || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("InitialPacketSize %d on a 1200-byte path: %v, want EMSGSIZE", size, err)
		}
	}
}
