package quic

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil"
)

// startMigrationServer is an echo server on a loopback socket with the
// address-validation counters on (they count migrations).
func startMigrationServer(t *testing.T, ctx context.Context) *echoServer {
	t.Helper()
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: NeverRetry()}}
	t.Cleanup(func() { tr.Close() })
	return serveEcho(t, ctx, tr, &Config{MaxIdleTimeout: 20 * time.Second})
}

// migrationServer is startMigrationServer on the harness.
func (s *sim) migrationServer() *echoServer {
	return s.server(&Transport{AddressValidation: &AddressValidationConfig{Policy: NeverRetry()}}, &Config{MaxIdleTimeout: 20 * time.Second})
}

// validated reports whether c has no path validation in progress.
func validated(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.path.migration.validating
}

// checkMigrations checks the server's migration and validation-failure
// counters.
func checkMigrations(t *testing.T, srv *echoServer, migrations, failures uint64) {
	t.Helper()
	st := srv.tr.AddressValidationStats()
	if st.PathMigrations != migrations || st.PathValidationFailures != failures {
		t.Fatalf("migrations %d, validation failures %d; want %d and %d", st.PathMigrations, st.PathValidationFailures, migrations, failures)
	}
}

// echoOver sends n random bytes on a new stream of quic-go's c and checks
// the echo.
func echoOver(t *testing.T, ctx context.Context, c *quicgo.Conn, n int) {
	t.Helper()
	echoN(t, ctx, c, c.OpenStreamSync, n)
}

// echoN sends n random bytes on a stream open returns and checks the echo,
// for our connections and quic-go's alike; c names the connection's close
// reason when the echo fails.
func echoN[S io.ReadWriteCloser](t *testing.T, ctx context.Context, c interface{ Context() context.Context }, open func(context.Context) (S, error), n int) {
	t.Helper()
	if err := echoErr(ctx, c, open, n); err != nil {
		t.Fatal(err)
	}
}

// echoErr is echoN returning its failure, for goroutines other than the
// test's.
func echoErr[S io.ReadWriteCloser](ctx context.Context, c interface{ Context() context.Context }, open func(context.Context) (S, error), n int) error {
	s, err := open(ctx)
	if err != nil {
		return err
	}
	if err := echoStream(s, testData(n, uint64(n))); err != nil {
		return fmt.Errorf("%w (connection: %v)", err, connCause(c))
	}
	return nil
}

func dialQuicGo(t *testing.T, ctx context.Context, pc net.PacketConn, to net.Addr) (*quicgo.Transport, *quicgo.Conn) {
	t.Helper()
	tr := &quicgo.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close() })
	c, err := tr.Dial(ctx, to, clientTLS(t), &quicgo.Config{MaxIdleTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	return tr, c
}

// waitFor polls until cond holds (testutil.WaitFor).
var waitFor = testutil.WaitFor

// TestMigrationQuicGoClientSwitchesPath: a quic-go client probes a new
// path (a second socket), switches to it and keeps transferring; the
// server answers the probe on the new path, follows the client there and
// validates it.
func TestMigrationQuicGoClientSwitchesPath(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.migrationServer()
		_, c := s.dialQuicGo(simClientAddr(1), srv.addr)
		echoOver(t, ctx, c, 100<<10)
		sc := srv.only(t)

		second := s.socket(simClientAddr(2))
		path, err := c.AddPath(&quicgo.Transport{Conn: second.Conn})
		if err != nil {
			t.Fatal(err)
		}
		if err := path.Probe(ctx); err != nil {
			t.Fatalf("probing the new path: %v (our PATH_RESPONSE did not reach it)", err)
		}
		checkMigrations(t, srv, 0, 0) // a probe alone does not move the connection
		if err := path.Switch(); err != nil {
			t.Fatal(err)
		}
		echoOver(t, ctx, c, 1<<20)
		if got, want := sc.RemoteAddr().String(), second.LocalAddr().String(); got != want {
			t.Fatalf("the server sends to %s, want the new path %s", got, want)
		}
		waitFor(t, "the new path validated", func() bool { return validated(sc) })
		checkMigrations(t, srv, 1, 0)
		// A new address got a new peer connection ID (RFC 9000 section 9.5).
		sc.mu.Lock()
		seq := sc.cids.remote.CurrentSequence()
		sc.mu.Unlock()
		if seq == 0 {
			t.Error("the server still sends with the client's handshake connection ID on the new path")
		}
	})
}

// TestMigrationNATRebinding: the client's port changes under it without
// the client knowing (same connection ID). The server follows, validates
// the new port with PATH_CHALLENGE (which quic-go answers) and the
// transfer goes on.
func TestMigrationNATRebinding(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.migrationServer()
		tr, c := s.dialQuicGo(simClientAddr(1), srv.addr)
		echoOver(t, ctx, c, 64<<10)
		sc := srv.only(t)
		before := sc.RemoteAddr().String()

		rebound := netip.AddrPortFrom(simClientAddr(1).Addr(), 5000)
		if err := tr.Conn.(*simnet.Conn).Rebind(rebound); err != nil {
			t.Fatal(err)
		}
		echoOver(t, ctx, c, 1<<20)
		if got := sc.RemoteAddr().String(); got != rebound.String() {
			t.Fatalf("the server sends to %s (was %s), want the rebound port %s", got, before, rebound)
		}
		waitFor(t, "the rebound port validated", func() bool { return validated(sc) })
		checkMigrations(t, srv, 1, 0)
	})
}

// simAttacker is an on-path attacker: it can send a copy of one client
// packet to the server from its own address first, as forwarding a packet
// from elsewhere would (RFC 9000 section 9.3.3), and hold the client's
// own packets back; it counts what the server sends to it (nothing
// answers there).
type simAttacker struct {
	addr netip.AddrPort

	mu        sync.Mutex
	copyOne   bool      // copy the next short-header datagram from the client
	block     bool      // drop the client's datagrams
	holdUntil time.Time // the client's datagrams until then follow the copy
	copied    chan struct{}
	toAtk     atomic.Int64
}

// attacker installs a simAttacker between client and the server.
func (s *sim) attacker(client netip.AddrPort) *simAttacker {
	a := &simAttacker{addr: netip.MustParseAddrPort("198.18.66.6:6666"), copied: make(chan struct{}, 1)}
	s.tap(func(p *simnet.Packet) bool {
		if p.To == a.addr {
			a.toAtk.Add(1)
			return false
		}
		if p.From != client {
			return true
		}
		now := time.Now()
		a.mu.Lock()
		dup := a.copyOne && p.Data[0]&0x80 == 0
		a.copyOne = a.copyOne && !dup
		if dup {
			a.holdUntil = now.Add(20 * time.Millisecond)
		}
		block, holdUntil := a.block, a.holdUntil
		a.mu.Unlock()
		delay := s.net.Link(client.Addr(), p.To.Addr()).Delay
		if dup {
			// The copy arrives at the normal time.
			s.net.Inject(simnet.Packet{From: a.addr, To: p.To, Data: p.Data}, delay)
			a.copied <- struct{}{}
		}
		switch {
		case block:
			return false
		case now.Before(holdUntil):
			// The client's packets, this one and those sent in the next
			// 20 ms, follow 20 ms after the copy, in order.
			s.net.Inject(*p, delay+holdUntil.Sub(now))
			return false
		}
		return true
	})
	return a
}

func (a *simAttacker) set(copyOne, block bool) {
	a.mu.Lock()
	a.copyOne, a.block = copyOne, block
	a.mu.Unlock()
}

// startCopiedTransfer connects quic-go's client to a migration server,
// then starts an echo of n bytes during which the attacker sends one
// client packet from its address first (holding the client's own packets
// back if block). It returns once the copy went out; done closes when the
// echo ended.
func startCopiedTransfer(t *testing.T, s *sim, block bool, n int) *copiedTransfer {
	t.Helper()
	ctx := s.ctx()
	srv := s.migrationServer()
	atk := s.attacker(simClientAddr(1))
	_, c := s.dialQuicGo(simClientAddr(1), srv.addr)
	echoOver(t, ctx, c, 64<<10)
	sc := srv.only(t)
	atk.set(true, block)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := echoErr(ctx, c, c.OpenStreamSync, n); err != nil {
			t.Error(err)
		}
	}()
	<-atk.copied
	return &copiedTransfer{ctx, srv, atk, sc, c, done}
}

// copiedTransfer is what startCopiedTransfer set up: sc is the server's
// connection, c the client's.
type copiedTransfer struct {
	ctx  context.Context
	srv  *echoServer
	atk  *simAttacker
	sc   *Conn
	c    *quicgo.Conn
	done <-chan struct{}
}

// TestMigrationForwardedCopyDoesNotHijack: a copy of a client packet
// arriving first from another address moves the server there, but the
// client's next packets from its real address bring the connection back
// before validation of the attacker's address could succeed; nothing is
// lost.
func TestMigrationForwardedCopyDoesNotHijack(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		x := startCopiedTransfer(t, s, false, 256<<10)
		<-x.done
		if got, want := x.sc.RemoteAddr().String(), simClientAddr(1).String(); got != want {
			t.Fatalf("the server sends to %s, want the client's real address %s", got, want)
		}
		if x.atk.toAtk.Load() == 0 {
			t.Error("the server never sent to the attacker's address: the copy did not move it")
		}
		// One migration, to the attacker; the return is not a migration.
		checkMigrations(t, x.srv, 1, 0)
		if !validated(x.sc) {
			t.Error("the server still validates a path after returning to the validated one")
		}
	})
}

// TestMigrationValidationFailureFallsBack: the copy moves the server to an
// address that never answers while the client's own packets are held
// back; validation times out, the server returns to the last validated
// address, and the connection works once the client's packets flow again.
func TestMigrationValidationFailureFallsBack(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		x := startCopiedTransfer(t, s, true, 64<<10)
		waitFor(t, "the server to move to the attacker's address", func() bool {
			return x.sc.RemoteAddr().String() == x.atk.addr.String()
		})
		waitFor(t, "the validation to fail", func() bool {
			return x.srv.tr.AddressValidationStats().PathValidationFailures == 1
		})
		if got, want := x.sc.RemoteAddr().String(), simClientAddr(1).String(); got != want {
			t.Fatalf("after the failed validation the server sends to %s, want %s", got, want)
		}
		x.atk.set(false, false)
		<-x.done
		echoOver(t, x.ctx, x.c, 16<<10)
	})
}

// TestMigrationChurn: the client's address changes every 20 datagrams
// during 2 MiB of transfers (a NAT that keeps rebinding the client), often
// back to an earlier one and often before the previous validation
// completed. The connection survives, the data arrives intact, and the
// server ends up on the client's last address with its path state
// bounded.
func TestMigrationChurn(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.migrationServer()
		tr, c := s.dialQuicGo(simClientAddr(1), srv.addr)
		sock := tr.Conn.(*simnet.Conn)
		var addrs []netip.AddrPort
		for i := range 4 {
			addrs = append(addrs, netip.AddrPortFrom(simClientAddr(1).Addr(), uint16(5000+i)))
		}
		var churn atomic.Bool
		var mu sync.Mutex
		sent := 0
		s.tap(func(p *simnet.Packet) bool {
			if p.From.Addr() != simClientAddr(1).Addr() {
				return true
			}
			const every = 20
			mu.Lock()
			defer mu.Unlock()
			if churn.Load() && sent%every == 0 {
				p.From = addrs[(sent/every)*7%len(addrs)]
				if err := sock.Rebind(p.From); err != nil {
					panic(err)
				}
			}
			sent++
			return true
		})
		echoOver(t, ctx, c, 64<<10)
		churn.Store(true)
		for range 4 {
			echoOver(t, ctx, c, 512<<10)
		}
		churn.Store(false)
		echoOver(t, ctx, c, 64<<10) // on the final address
		sc := srv.only(t)
		if got, want := sc.RemoteAddr().String(), sock.AddrPort().String(); got != want {
			t.Errorf("the server sends to %s, want the client's last address %s", got, want)
		}
		st := srv.tr.AddressValidationStats()
		t.Logf("%d migrations, %d failed validations", st.PathMigrations, st.PathValidationFailures)
		if st.PathMigrations < 5 {
			t.Errorf("only %d migrations counted; the churn did not happen", st.PathMigrations)
		}
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if n := sc.cids.remote.ActiveCount(); n < 1 || n > remoteCIDLimit {
			t.Errorf("%d peer connection IDs held", n)
		}
		if len(sc.path.responses) > maxPathResponses {
			t.Errorf("%d path responses queued", len(sc.path.responses))
		}
	})
}
