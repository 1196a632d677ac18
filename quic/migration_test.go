package quic

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// startMigrationServer is an echo server on a loopback socket with the
// address-validation counters on (they count migrations).
func startMigrationServer(t *testing.T, ctx context.Context) *echoServer {
	t.Helper()
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: NeverRetry()}}
	t.Cleanup(func() { tr.Close() })
	return serveEcho(t, ctx, tr, &Config{MaxIdleTimeout: 20 * time.Second})
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

// waitFor polls cond; the bound is a hang guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMigrationQuicGoClientSwitchesPath: a quic-go client probes a new
// path (a second socket), switches to it and keeps transferring; the
// server answers the probe on the new path, follows the client there and
// validates it.
func TestMigrationQuicGoClientSwitchesPath(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	_, c := dialQuicGo(t, ctx, listenUDP(t), srv.addr)
	echoOver(t, ctx, c, 100<<10)
	sc := srv.only(t)

	second := listenUDP(t)
	path, err := c.AddPath(&quicgo.Transport{Conn: second})
	if err != nil {
		t.Fatal(err)
	}
	if err := path.Probe(ctx); err != nil {
		t.Fatalf("probing the new path: %v (our PATH_RESPONSE did not reach it)", err)
	}
	if got := srv.tr.AddressValidationStats().PathMigrations; got != 0 {
		t.Fatalf("a probe alone moved the connection (%d migrations)", got)
	}
	if err := path.Switch(); err != nil {
		t.Fatal(err)
	}
	echoOver(t, ctx, c, 1<<20)
	if got, want := sc.RemoteAddr().String(), second.LocalAddr().String(); got != want {
		t.Fatalf("the server sends to %s, want the new path %s", got, want)
	}
	waitFor(t, "the new path validated", func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return !sc.path.validating
	})
	st := srv.tr.AddressValidationStats()
	if st.PathMigrations != 1 || st.PathValidationFailures != 0 {
		t.Fatalf("migrations %d, validation failures %d; want 1 and 0", st.PathMigrations, st.PathValidationFailures)
	}
	// A new address got a new peer connection ID (RFC 9000 section 9.5).
	sc.mu.Lock()
	seq := sc.cids.remote.CurrentSequence()
	sc.mu.Unlock()
	if seq == 0 {
		t.Error("the server still sends with the client's handshake connection ID on the new path")
	}
}

// rebindingConn is a client socket behind a NAT that changes the client's
// port: rebind makes later datagrams leave from a fresh socket, while the
// old ones still deliver what reaches them.
type rebindingConn struct {
	mu   sync.Mutex
	cur  *net.UDPConn
	all  []*net.UDPConn
	in   chan rebindPacket
	done chan struct{}
	once sync.Once
}

type rebindPacket struct {
	b    []byte
	from net.Addr
}

func newRebindingConn(t *testing.T) *rebindingConn {
	r := &rebindingConn{in: make(chan rebindPacket, 256), done: make(chan struct{})}
	r.rebind(t)
	t.Cleanup(func() { r.Close() })
	return r
}

func (r *rebindingConn) rebind(t *testing.T) {
	u := listenUDP(t)
	r.mu.Lock()
	r.cur = u
	r.all = append(r.all, u)
	r.mu.Unlock()
	go func() {
		for {
			b := make([]byte, 2048)
			n, from, err := u.ReadFrom(b)
			if err != nil {
				return
			}
			select {
			case r.in <- rebindPacket{b[:n], from}:
			case <-r.done:
				return
			}
		}
	}()
}

func (r *rebindingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case p := <-r.in:
		return copy(b, p.b), p.from, nil
	case <-r.done:
		return 0, nil, net.ErrClosed
	}
}

func (r *rebindingConn) WriteTo(b []byte, to net.Addr) (int, error) {
	r.mu.Lock()
	u := r.cur
	r.mu.Unlock()
	return u.WriteTo(b, to)
}

func (r *rebindingConn) Close() error {
	r.once.Do(func() { close(r.done) })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.all {
		u.Close()
	}
	return nil
}

func (r *rebindingConn) LocalAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.LocalAddr()
}

func (r *rebindingConn) SetDeadline(t time.Time) error { return r.SetReadDeadline(t) }

// SetReadDeadline only supports what quic-go's Transport.Close does with
// it: a deadline in the past ends the reads.
func (r *rebindingConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		r.once.Do(func() { close(r.done) })
	}
	return nil
}

func (r *rebindingConn) SetWriteDeadline(time.Time) error { return nil }

// TestMigrationNATRebinding: the client's port changes under it without
// the client knowing (same connection ID). The server follows, validates
// the new port with PATH_CHALLENGE (which quic-go answers) and the
// transfer goes on.
func TestMigrationNATRebinding(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	rc := newRebindingConn(t)
	_, c := dialQuicGo(t, ctx, rc, srv.addr)
	echoOver(t, ctx, c, 64<<10)
	sc := srv.only(t)
	before := sc.RemoteAddr().String()

	rc.rebind(t)
	echoOver(t, ctx, c, 1<<20)
	if got, want := sc.RemoteAddr().String(), rc.LocalAddr().String(); got != want || got == before {
		t.Fatalf("the server sends to %s (was %s), want the rebound port %s", got, before, want)
	}
	waitFor(t, "the rebound port validated", func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return !sc.path.validating
	})
	if st := srv.tr.AddressValidationStats(); st.PathMigrations != 1 || st.PathValidationFailures != 0 {
		t.Fatalf("migrations %d, validation failures %d; want 1 and 0", st.PathMigrations, st.PathValidationFailures)
	}
}

// pathRelay carries a client's datagrams to the server. It can copy one
// client datagram to the server from a second socket first, as an on-path
// attacker forwarding a packet from its own address would (RFC 9000
// section 9.3.3), and it can hold the client's traffic back.
type pathRelay struct {
	front    *net.UDPConn // the client talks to this
	genuine  *net.UDPConn // the client's traffic leaves from here
	attacker *net.UDPConn // the copy leaves from here; what reaches it is dropped
	server   net.Addr

	mu      sync.Mutex
	client  net.Addr
	copyOne bool // send the next short-header datagram from attacker first
	block   bool // drop the client's datagrams
	copied  chan struct{}
	toAtk   atomic.Int64 // datagrams the server sent to the attacker
}

func newPathRelay(t *testing.T, server net.Addr) *pathRelay {
	r := &pathRelay{front: listenUDP(t), genuine: listenUDP(t), attacker: listenUDP(t), server: server, copied: make(chan struct{}, 1)}
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := r.front.ReadFrom(b)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.client = from
			dup := r.copyOne && b[0]&0x80 == 0
			r.copyOne = r.copyOne && !dup
			block := r.block
			r.mu.Unlock()
			if dup {
				_, _ = r.attacker.WriteTo(b[:n], r.server)
				time.Sleep(20 * time.Millisecond) // the copy arrives well first
				r.copied <- struct{}{}
			}
			if !block {
				_, _ = r.genuine.WriteTo(b[:n], r.server)
			}
		}
	}()
	go func() {
		b := make([]byte, 2048)
		for {
			n, _, err := r.genuine.ReadFrom(b)
			if err != nil {
				return
			}
			r.mu.Lock()
			to := r.client
			r.mu.Unlock()
			if to != nil {
				_, _ = r.front.WriteTo(b[:n], to)
			}
		}
	}()
	go func() {
		b := make([]byte, 2048)
		for {
			if _, _, err := r.attacker.ReadFrom(b); err != nil {
				return
			}
			r.toAtk.Add(1)
		}
	}()
	return r
}

func (r *pathRelay) set(copyOne, block bool) {
	r.mu.Lock()
	r.copyOne, r.block = copyOne, block
	r.mu.Unlock()
}

// startCopiedTransfer connects quic-go's client to a migration server
// through a pathRelay, then starts an echo of n bytes during which the
// relay sends one client packet from its attacker socket first (holding
// the client's own packets back if block). It returns once the copy went
// out; done closes when the echo ended.
func startCopiedTransfer(t *testing.T, block bool, n int) *copiedTransfer {
	t.Helper()
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newPathRelay(t, srv.addr)
	_, c := dialQuicGo(t, ctx, listenUDP(t), relay.front.LocalAddr())
	echoOver(t, ctx, c, 64<<10)
	sc := srv.only(t)
	relay.set(true, block)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := echoErr(ctx, c, c.OpenStreamSync, n); err != nil {
			t.Error(err)
		}
	}()
	<-relay.copied
	return &copiedTransfer{ctx, srv, relay, sc, c, done}
}

// copiedTransfer is what startCopiedTransfer set up: sc is the server's
// connection, c the client's.
type copiedTransfer struct {
	ctx   context.Context
	srv   *echoServer
	relay *pathRelay
	sc    *Conn
	c     *quicgo.Conn
	done  <-chan struct{}
}

// TestMigrationForwardedCopyDoesNotHijack: a copy of a client packet
// arriving first from another address moves the server there, but the
// client's next packets from its real address bring the connection back
// before validation of the attacker's address could succeed; nothing is
// lost.
func TestMigrationForwardedCopyDoesNotHijack(t *testing.T) {
	x := startCopiedTransfer(t, false, 256<<10)
	srv, relay, sc := x.srv, x.relay, x.sc
	<-x.done
	if got, want := sc.RemoteAddr().String(), relay.genuine.LocalAddr().String(); got != want {
		t.Fatalf("the server sends to %s, want the client's real address %s", got, want)
	}
	if relay.toAtk.Load() == 0 {
		t.Error("the server never sent to the attacker's address: the copy did not move it")
	}
	st := srv.tr.AddressValidationStats()
	if st.PathMigrations != 1 {
		t.Errorf("%d migrations counted, want 1 (to the attacker; the return is not a migration)", st.PathMigrations)
	}
	sc.mu.Lock()
	validating := sc.path.validating
	sc.mu.Unlock()
	if validating {
		t.Error("the server still validates a path after returning to the validated one")
	}
}

// TestMigrationValidationFailureFallsBack: the copy moves the server to an
// address that never answers while the client's own packets are held
// back; validation times out, the server returns to the last validated
// address, and the connection works once the client's packets flow again.
func TestMigrationValidationFailureFallsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a path validation timeout (about 3 s)")
	}
	x := startCopiedTransfer(t, true, 64<<10)
	srv, relay, sc := x.srv, x.relay, x.sc
	waitFor(t, "the server to move to the attacker's address", func() bool {
		return sc.RemoteAddr().String() == relay.attacker.LocalAddr().String()
	})
	waitFor(t, "the validation to fail", func() bool {
		return srv.tr.AddressValidationStats().PathValidationFailures == 1
	})
	if got, want := sc.RemoteAddr().String(), relay.genuine.LocalAddr().String(); got != want {
		t.Fatalf("after the failed validation the server sends to %s, want %s", got, want)
	}
	relay.set(false, false)
	<-x.done
	echoOver(t, x.ctx, x.c, 16<<10)
}

// churnRelay forwards a client's datagrams to the server from one of
// several sockets, moving to another every `every` datagrams while churn
// is on (a NAT that keeps rebinding the client, sometimes back to an
// earlier port), and sends the server's answers back to the client
// whichever socket they reach.
type churnRelay struct {
	front   *net.UDPConn
	outs    []*net.UDPConn
	server  net.Addr
	client  atomic.Pointer[net.Addr]
	current atomic.Int32
	churn   atomic.Bool
}

func newChurnRelay(t *testing.T, server net.Addr, n int) *churnRelay {
	r := &churnRelay{front: listenUDP(t), server: server}
	for range n {
		out := listenUDP(t)
		r.outs = append(r.outs, out)
		go func() {
			b := make([]byte, 4096)
			for {
				k, _, err := out.ReadFrom(b)
				if err != nil {
					return
				}
				if c := r.client.Load(); c != nil {
					_, _ = r.front.WriteTo(b[:k], *c)
				}
			}
		}()
	}
	go func() {
		const every = 20
		b := make([]byte, 4096)
		for i := 0; ; i++ {
			k, from, err := r.front.ReadFrom(b)
			if err != nil {
				return
			}
			r.client.Store(&from)
			if r.churn.Load() && i%every == 0 {
				next := (i / every) * 7 % len(r.outs)
				r.current.Store(int32(next))
			}
			_, _ = r.outs[r.current.Load()].WriteTo(b[:k], r.server)
		}
	}()
	return r
}

// TestMigrationChurn: the client's address changes every 20 datagrams
// during 2 MiB of transfers, often back to an earlier one and often before
// the previous validation completed. The connection survives, the data arrives intact, and the
// server ends up on the client's last address with its path state bounded.
func TestMigrationChurn(t *testing.T) {
	ctx := testCtx(t)
	srv := startMigrationServer(t, ctx)
	relay := newChurnRelay(t, srv.addr, 4)
	_, c := dialQuicGo(t, ctx, listenUDP(t), relay.front.LocalAddr())
	echoOver(t, ctx, c, 64<<10)
	relay.churn.Store(true)
	for range 4 {
		echoOver(t, ctx, c, 512<<10)
	}
	relay.churn.Store(false)
	echoOver(t, ctx, c, 64<<10) // on the final address
	sc := srv.only(t)
	if got, want := sc.RemoteAddr().String(), relay.outs[relay.current.Load()].LocalAddr().String(); got != want {
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
	if len(sc.pathResponses) > maxPathResponses {
		t.Errorf("%d path responses queued", len(sc.pathResponses))
	}
}
