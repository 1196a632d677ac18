package fileserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/offload/reuseport"
)

// Issue 13's end-to-end proof: the server runs as `serve --workers 4`
// does (Config.Workers 4, the QUIC-LB IDs of the default layout), and
// clients that change their address keep every connection and every byte
// because the sk_reuseport program steers each datagram to the worker in
// its connection ID. The same scenarios with the program detached (the
// kernel's 4-tuple hash picks the socket) lose connections: the program
// is what makes it work.

const testWorkers = 4

// startWorkersServer runs the file server with 4 workers, serving root,
// no offload and no Retry, and skips the test unless the steering program
// is attached (it needs CAP_BPF).
func startWorkersServer(t *testing.T, n *offloadNet, root string) *offloadServer {
	t.Helper()
	srv := startNetnsServer(t, n, func(c *Config) {
		c.Root = root
		c.Workers = testWorkers
		c.Retry = RetryNever
		// The detached halves leave connections the clients gave up on:
		// do not wait the default 10 s for them at the end.
		c.ShutdownTimeout = 500 * time.Millisecond
	})
	g := srv.group()
	if g.Mode() != reuseport.ModeSteered || g.Workers() != testWorkers {
		t.Skipf("skipping: the steering program is not attached here (%v, %d workers: %v)", g.Mode(), g.Workers(), g.Reason())
	}
	return srv
}

// group returns the HTTP/3 listener's socket group.
func (srv *offloadServer) group() *reuseport.Group {
	srv.h3.mu.Lock()
	defer srv.h3.mu.Unlock()
	return srv.h3.workers.Group
}

// steering returns the program's counters.
func (srv *offloadServer) steering(t *testing.T) reuseport.Stats {
	t.Helper()
	st, err := srv.group().Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// detach removes the steering program for the rest of the test.
func (srv *offloadServer) detach(t *testing.T) {
	t.Helper()
	if err := srv.group().Detach(); err != nil {
		t.Fatal(err)
	}
}

// tryFetch GETs name with c and reports whether the body arrived complete
// and equal to want, within limit.
func (srv *offloadServer) tryFetch(c *http.Client, name string, want []byte, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.url+name, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return fmt.Errorf("body: %w (%d of %d bytes)", err, len(got), len(want))
	case resp.StatusCode != 200 || resp.Proto != "HTTP/3.0":
		return fmt.Errorf("%d %s", resp.StatusCode, resp.Proto)
	case !bytes.Equal(got, want):
		return fmt.Errorf("%d bytes that differ from the %d of the file", len(got), len(want))
	}
	return nil
}

// migrationClients is how many quic-go clients migrate per run: with the
// program detached each lands on its connection's worker with probability
// 1/4 after the move, so all 8 surviving by chance has probability 4^-8.
const migrationClients = 8

// quicGoMigrations runs migrationClients quic-go clients, each fetching
// first.bin, migrating (AddPath from 198.18.0.11, Probe, Switch) and
// fetching second.bin on the same connection, and returns how many kept
// their connection with every byte. limit bounds the migration and the
// fetch after it; the fetch before it, which must succeed whatever the
// load, has the hang guard.
func quicGoMigrations(t *testing.T, srv *offloadServer, first, second []byte, limit time.Duration) int {
	t.Helper()
	kept := 0
	for i := range migrationClients {
		mc := srv.newMigratingClient(t, offIPC2)
		if err := srv.tryFetch(mc.http, "first.bin", first, offHangGuard); err != nil {
			t.Fatalf("client %d before migrating: %v", i, err)
		}
		if err := mc.tryMigrate(limit); err != nil {
			t.Logf("client %d: %v", i, err)
			continue
		}
		conn, _ := mc.connection()
		if err := srv.tryFetch(mc.http, "second.bin", second, limit); err != nil {
			t.Logf("client %d after migrating: %v", i, err)
			continue
		}
		if _, dials := mc.connection(); dials != 1 || conn.Context().Err() != nil {
			t.Logf("client %d: %d dials, connection %v", i, dials, context.Cause(conn.Context()))
			continue
		}
		kept++
	}
	return kept
}

// TestWorkersQuicGoClientsMigrate: 8 quic-go HTTP/3 clients migrate to a
// new address and port in the middle of their downloads. With the
// steering program every connection and every byte survives, the program
// steered the packets of the new paths by connection ID, and the server
// counted the migrations. With the program detached, connections are lost.
func TestWorkersQuicGoClientsMigrate(t *testing.T) {
	n := newOffloadNet(t)
	n.addClientAddr(t, offIPC2)
	root := t.TempDir()
	first := writeRandomBlob(t, root, "first.bin", 256<<10)
	second := writeRandomBlob(t, root, "second.bin", 1<<20)
	srv := startWorkersServer(t, n, root)

	before := srv.quicStats()
	if kept := quicGoMigrations(t, srv, first, second, offHangGuard); kept != migrationClients {
		t.Fatalf("steered: %d of %d migrating connections kept all their bytes\n%s", kept, migrationClients, srv.logs.String())
	}
	st := srv.steering(t)
	if st.Steered == 0 || st.Hashed < migrationClients {
		t.Errorf("steering counters %+v: want steered packets and a hashed first Initial per client", st)
	}
	checkMigrationCounted(t, srv, before, migrationClients)
	t.Logf("steered: all %d migrated; program counters %+v", migrationClients, st)

	srv.detach(t)
	// Each loss waits out the limit: keep it short (a loss under load
	// only strengthens what this half shows).
	kept := quicGoMigrations(t, srv, first, second, 500*time.Millisecond)
	t.Logf("detached: %d of %d migrating connections kept", kept, migrationClients)
	if kept == migrationClients {
		t.Fatalf("with the program detached all %d migrations still worked: the test does not show what steering does", migrationClients)
	}
}

// TestWorkersNgtcp2ClientMigrates: ngtcp2's gtlsclient downloads 4 MiB and
// moves to a new local port mid-transfer, actively (a new connection ID)
// and as a NAT rebinding (the same one); with 4 workers the server follows
// it in both, as the checks of ngtcp2Migrates require, and the program
// steered the client's packets.
func TestWorkersNgtcp2ClientMigrates(t *testing.T) {
	client := findGtlsclient(t)
	n := newOffloadNet(t)
	runTC(t, n.nsS, "qdisc", "add", "dev", offIface, "root", "tbf", "rate", "32mbit", "burst", "32kb", "latency", "200ms")
	root := t.TempDir()
	blob := writeRandomBlob(t, root, "blob.bin", 4<<20)
	srv := startWorkersServer(t, n, root)
	for _, mode := range ngtcp2Moves {
		t.Run(mode.name, func(t *testing.T) {
			qsBefore, stBefore := srv.quicStats(), srv.steering(t)
			ngtcp2Migrates(t, srv, client, mode.name, mode.args, blob)
			checkMigrationCounted(t, srv, qsBefore, 1)
			if st := srv.steering(t); st.Steered <= stBefore.Steered {
				t.Errorf("the program steered no packet of the transfer: %+v then %+v", stBefore, st)
			}
		})
	}
}

// natRelay forwards a client's datagrams to the server from an upstream
// socket it replaces every `every` datagrams, as a NAT whose mapping
// changes does: the server sees the client's address change again and
// again on one connection. Replies to the current upstream socket go back
// to the client; the old socket is closed at each rebinding, so replies
// to it are lost, as behind a real NAT.
type natRelay struct {
	front  *net.UDPConn // the client's side, in the client namespace
	server *net.UDPAddr
	every  int
	open   func() (*net.UDPConn, error) // a fresh upstream socket

	mu     sync.Mutex
	up     *net.UDPConn
	client net.Addr
	sent   int

	rebinds atomic.Int64
	wg      sync.WaitGroup
}

// newNATRelay starts a relay in the client namespace towards the server;
// Cleanup stops it.
func newNATRelay(t *testing.T, n *offloadNet, every int) *natRelay {
	t.Helper()
	r := &natRelay{server: net.UDPAddrFromAddrPort(netip.AddrPortFrom(offIPS, offPort)), every: every}
	r.open = func() (c *net.UDPConn, err error) {
		err = n.enter(n.nsC)(func() error {
			c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(offIPC, 0)))
			return err
		})
		return c, err
	}
	var err error
	if r.front, err = r.open(); err != nil {
		t.Fatal(err)
	}
	if err := r.rebind(); err != nil {
		t.Fatal(err)
	}
	r.wg.Go(r.forward)
	t.Cleanup(func() {
		r.front.Close()
		r.mu.Lock()
		r.up.Close()
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

// rebind replaces the upstream socket; the caller holds mu or is alone.
func (r *natRelay) rebind() error {
	up, err := r.open()
	if err != nil {
		return err
	}
	if r.up != nil {
		r.up.Close()
		r.rebinds.Add(1)
	}
	r.up = up
	r.wg.Go(func() { r.backward(up) })
	return nil
}

// forward carries the client's datagrams upstream.
func (r *natRelay) forward() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.front.ReadFrom(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.client = from
		if r.sent > 0 && r.sent%r.every == 0 {
			if err := r.rebind(); err != nil {
				r.mu.Unlock()
				return
			}
		}
		r.sent++
		up := r.up
		r.mu.Unlock()
		_, _ = up.WriteTo(buf[:n], r.server)
	}
}

// backward carries the server's replies on up back to the client, until
// up is closed.
func (r *natRelay) backward(up *net.UDPConn) {
	buf := make([]byte, 65536)
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		client := r.client
		r.mu.Unlock()
		if client != nil {
			_, _ = r.front.WriteTo(buf[:n], client)
		}
	}
}

// relayClient is quic-go's HTTP/3 client talking to the server through
// its own NAT relay, on one connection (dials counts them).
func (srv *offloadServer) relayClient(t *testing.T, r *natRelay) (*http.Client, *atomic.Int32) {
	t.Helper()
	var dials atomic.Int32
	front := r.front.LocalAddr()
	tr := &quicgohttp3.Transport{
		TLSClientConfig: srv.tls.Clone(),
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quicgo.Config) (c *quicgo.Conn, err error) {
			dials.Add(1)
			err = srv.net.enter(srv.net.nsC)(func() error {
				c, err = quicgo.DialAddrEarly(ctx, front.String(), tc, qc)
				return err
			})
			return c, err
		},
	}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr}, &dials
}

// relayClients is how many clients go through relays per run; with the
// program detached a rebinding lands on the connection's worker with
// probability 1/4, and each client rebinds about ten times.
const relayClients = 2

// relayDownloads runs relayClients quic-go clients, each through a relay
// that rebinds every 20 datagrams, each fetching blob twice on one
// connection; it returns how many kept their connection and every byte,
// and the relays' rebindings.
func relayDownloads(t *testing.T, srv *offloadServer, blob []byte, limit time.Duration) (kept int, rebinds int64) {
	t.Helper()
	for i := range relayClients {
		r := newNATRelay(t, srv.net, 20)
		c, dials := srv.relayClient(t, r)
		ok := true
		for j := range 2 {
			start := time.Now()
			if err := srv.tryFetch(c, "blob.bin", blob, limit); err != nil {
				t.Logf("client %d, download %d: %v", i, j, err)
				ok = false
				break
			}
			t.Logf("client %d, download %d: %v, %d rebindings so far", i, j, time.Since(start).Round(time.Millisecond), r.rebinds.Load())
		}
		if ok && dials.Load() != 1 {
			t.Logf("client %d needed %d connections", i, dials.Load())
			ok = false
		}
		if ok {
			kept++
		}
		rebinds += r.rebinds.Load()
	}
	return kept, rebinds
}

// TestWorkersNATRebindingRelay: 2 quic-go clients behind NAT relays whose
// mapping changes every 20 datagrams download 2 x 1 MiB each on one
// connection. With the steering program every connection and byte
// survives the rebindings; with it detached, connections are lost.
func TestWorkersNATRebindingRelay(t *testing.T) {
	n := newOffloadNet(t)
	root := t.TempDir()
	blob := writeRandomBlob(t, root, "blob.bin", 1<<20)
	srv := startWorkersServer(t, n, root)

	before := srv.quicStats()
	kept, rebinds := relayDownloads(t, srv, blob, offHangGuard)
	if kept != relayClients {
		t.Fatalf("steered: %d of %d connections behind rebinding NATs kept all their bytes\n%s", kept, relayClients, srv.logs.String())
	}
	// Two downloads each: at least one rebinding per download. (quic-go's
	// client acknowledges every tenth packet once under way, so a 1 MiB
	// download makes few client datagrams: 2-4 rebindings per client.)
	if rebinds < 2*relayClients {
		t.Fatalf("the relays rebound only %d times: the test did not exercise rebinding", rebinds)
	}
	after := srv.quicStats()
	t.Logf("steered: %d connections, %d rebindings, %d migrations followed; program counters %+v",
		relayClients, rebinds, after.PathMigrations-before.PathMigrations, srv.steering(t))
	if after.PathMigrations-before.PathMigrations < uint64(relayClients) {
		t.Errorf("the server followed %d address changes, want at least one per client", after.PathMigrations-before.PathMigrations)
	}

	srv.detach(t)
	kept, rebinds = relayDownloads(t, srv, blob, 1500*time.Millisecond)
	t.Logf("detached: %d of %d connections kept over %d rebindings", kept, relayClients, rebinds)
	if kept == relayClients {
		t.Fatal("with the program detached every connection survived the rebindings: the test does not show what steering does")
	}
}
