package fileserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quic"
)

// These tests close the last open point for the integrated offload:
// a client that migrates to a new address, or only rotates its connection
// ID, is never dropped by the XDP fast path. The clients are independent
// implementations (quic-go, ngtcp2), so the server's connection IDs and
// paths are exercised as real peers use them.

// offIPC2 is the client namespace's second address (on br0 beside
// offIPC): the quic-go client migrates to it, a real address change.
var offIPC2 = netip.MustParseAddr("198.18.0.11")

// addClientAddr gives the client bridge a further address and the server
// a static neighbour for it (ARP is not meant to depend on the XDP program).
func (n *offloadNet) addClientAddr(t *testing.T, ip netip.Addr) {
	t.Helper()
	netnstest.IP(t, "-n", n.nsC, "addr", "add", netip.PrefixFrom(ip, 24).String(), "dev", "br0")
	netnstest.Neigh(t, n.nsS, offIface, ip, offMACC)
}

// startOffloadFileServer is startOffloadServer serving the directory root
// instead of the demo site (the migration tests need files large enough
// to migrate in the middle of).
func startOffloadFileServer(t *testing.T, n *offloadNet, root string) *offloadServer {
	t.Helper()
	return startOffloadServerConfig(t, n, func(c *Config) { c.Root = root })
}

// writeRandomBlob writes size random bytes to dir/name and returns them.
func writeRandomBlob(t *testing.T, dir, name string, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// fetchBlob GETs name with c and fails the test unless the body is want.
func (srv *offloadServer) fetchBlob(t *testing.T, c *http.Client, name string, want []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), offHangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.url+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		st, _ := srv.offload(t).Stats()
		t.Fatalf("GET %s: %v\ndatapath: %+v\nquic: %+v\nserver log:\n%s", name, err, st, srv.quicStats(), srv.logs.String())
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" {
		t.Fatalf("GET %s: %d %s, %d bytes, %v", name, resp.StatusCode, resp.Proto, len(got), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("GET %s: %d bytes that differ from the %d of the file", name, len(got), len(want))
	}
}

// scrapeMetrics returns the server's /metrics page, fetched from the
// server namespace where the metrics listener is.
func (srv *offloadServer) scrapeMetrics(t *testing.T) string {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		// net/http dials on a goroutine of its own.
		err = srv.net.enter(srv.net.nsS)(func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: offHangGuard}).Get("http://" + srv.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d, %v", resp.StatusCode, err)
	}
	return string(body)
}

// migrationMetric is the stack's counter of clients followed to a new
// address (quic.AddressValidationStats.PathMigrations) on /metrics.
const migrationMetric = "turboretry_quic_path_migrations_total"

// pathConn is a client UDP socket that counts what it receives and, once
// deaf, discards it: after a migration the old socket goes deaf, so a
// server that kept answering the old address would stall the client
// instead of going unnoticed. quic-go gets the net.PacketConn methods and
// the buffer and socket-option hooks, but not the socket's ReadMsgUDP,
// which would bypass ReadFrom.
type pathConn struct {
	udp       *net.UDPConn
	deaf      atomic.Bool
	rxBytes   atomic.Uint64
	discarded atomic.Uint64
}

func (c *pathConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.udp.ReadFrom(p)
		if err != nil || !c.deaf.Load() {
			c.rxBytes.Add(uint64(n))
			return n, addr, err
		}
		c.discarded.Add(1)
	}
}

func (c *pathConn) WriteTo(p []byte, addr net.Addr) (int, error) { return c.udp.WriteTo(p, addr) }
func (c *pathConn) Close() error                                 { return c.udp.Close() }
func (c *pathConn) LocalAddr() net.Addr                          { return c.udp.LocalAddr() }
func (c *pathConn) SetDeadline(t time.Time) error                { return c.udp.SetDeadline(t) }
func (c *pathConn) SetReadDeadline(t time.Time) error            { return c.udp.SetReadDeadline(t) }
func (c *pathConn) SetWriteDeadline(t time.Time) error           { return c.udp.SetWriteDeadline(t) }
func (c *pathConn) SetReadBuffer(n int) error                    { return c.udp.SetReadBuffer(n) }
func (c *pathConn) SetWriteBuffer(n int) error                   { return c.udp.SetWriteBuffer(n) }
func (c *pathConn) SyscallConn() (syscall.RawConn, error)        { return c.udp.SyscallConn() }

// migratingClient is quic-go's HTTP/3 client on a transport of its own
// (the first path), with a second transport ready for the migration.
type migratingClient struct {
	http       *http.Client
	tr1, tr2   *quicgo.Transport
	old, fresh *pathConn
	mu         sync.Mutex
	conn       *quicgo.Conn // the one connection the client dialed
	dials      int
}

// newMigratingClient opens the two sockets in the client namespace, the
// first on offIPC and the second on from2, both on fresh ports.
func (srv *offloadServer) newMigratingClient(t *testing.T, from2 netip.Addr) *migratingClient {
	t.Helper()
	mc := &migratingClient{}
	srv.net.in(t, srv.net.nsC, func() {
		for _, s := range []struct {
			ip  netip.Addr
			dst **pathConn
		}{{offIPC, &mc.old}, {from2, &mc.fresh}} {
			c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(s.ip, 0)))
			if err != nil {
				t.Fatal(err)
			}
			*s.dst = &pathConn{udp: c}
		}
	})
	mc.tr1 = &quicgo.Transport{Conn: mc.old}
	mc.tr2 = &quicgo.Transport{Conn: mc.fresh}
	server := net.UDPAddrFromAddrPort(netip.AddrPortFrom(offIPS, offPort))
	h3 := &quicgohttp3.Transport{
		TLSClientConfig: srv.tls.Clone(),
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quicgo.Config) (*quicgo.Conn, error) {
			c, err := mc.tr1.DialEarly(ctx, server, tc, qc)
			mc.mu.Lock()
			defer mc.mu.Unlock()
			mc.dials++
			if err == nil {
				mc.conn = c
			}
			return c, err
		},
	}
	mc.http = &http.Client{Transport: h3}
	t.Cleanup(func() {
		h3.Close()
		// The transports did not create their sockets, so closing them
		// leaves the sockets open.
		mc.tr1.Close()
		mc.tr2.Close()
		mc.old.Close()
		mc.fresh.Close()
	})
	return mc
}

// connection returns the dialed connection and the number of dials.
func (mc *migratingClient) connection() (*quicgo.Conn, int) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.conn, mc.dials
}

// migrate probes the path over the second transport, switches to it and
// makes the old socket deaf; it fails the test when that does not work.
func (mc *migratingClient) migrate(t *testing.T) {
	t.Helper()
	if err := mc.tryMigrate(offHangGuard); err != nil {
		t.Fatal(err)
	}
}

// tryMigrate is migrate reporting the failure, the probe bounded by limit.
func (mc *migratingClient) tryMigrate(limit time.Duration) error {
	conn, _ := mc.connection()
	if conn == nil {
		return errors.New("quic-go dialed no connection")
	}
	path, err := conn.AddPath(mc.tr2)
	if err != nil {
		return fmt.Errorf("AddPath: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := path.Probe(ctx); err != nil {
		return fmt.Errorf("probing the path from %v: %w (the server did not answer the PATH_CHALLENGE there)", mc.fresh.LocalAddr(), err)
	}
	if err := path.Switch(); err != nil {
		return fmt.Errorf("switching to the path from %v: %w", mc.fresh.LocalAddr(), err)
	}
	mc.old.deaf.Store(true)
	return nil
}

// TestOffloadQuicGoClientMigrates: quic-go's HTTP/3 client fetches a file,
// migrates its connection to a new address and port (AddPath, Probe,
// Switch: a new connection ID on a validated path) and fetches a second
// file on the same connection. Its old socket discards everything from the
// switch on, so the second response must reach the new address. The fast
// path drops none of the client's packets, the server counts the
// migration.
func TestOffloadQuicGoClientMigrates(t *testing.T) {
	n := newOffloadNet(t)
	n.addClientAddr(t, offIPC2)
	root := t.TempDir()
	first := writeRandomBlob(t, root, "first.bin", 256<<10)
	second := writeRandomBlob(t, root, "second.bin", 1<<20)
	srv := startOffloadFileServer(t, n, root)
	qsBefore := srv.quicStats()

	mc := srv.newMigratingClient(t, offIPC2)
	srv.fetchBlob(t, mc.http, "first.bin", first)
	before := srv.dpStats(t)
	mc.migrate(t)
	freshBefore := mc.fresh.rxBytes.Load()
	srv.fetchBlob(t, mc.http, "second.bin", second)

	conn, dials := mc.connection()
	if dials != 1 {
		t.Errorf("quic-go dialed %d connections, want the one it migrated", dials)
	}
	if err := conn.Context().Err(); err != nil {
		t.Errorf("the migrated connection ended: %v", context.Cause(conn.Context()))
	}
	// The second response arrived on the new socket (the old one was
	// deaf by then): the server moved to the new address.
	if got := mc.fresh.rxBytes.Load() - freshBefore; got < uint64(len(second)) {
		t.Errorf("the new path from %v received %d bytes after the switch, want >= %d", mc.fresh.LocalAddr(), got, len(second))
	}
	t.Logf("after the switch the old socket discarded %d datagrams, the new one received %d bytes",
		mc.old.discarded.Load(), mc.fresh.rxBytes.Load()-freshBefore)

	after := srv.dpStats(t)
	if after.XDP[xdp.DropMiss] != 0 || after.XDP[xdp.PassFailOpen] != 0 {
		t.Errorf("fast path: %d packets dropped as unknown, %d passed failing open; want none", after.XDP[xdp.DropMiss], after.XDP[xdp.PassFailOpen])
	}
	if after.XDP[xdp.PassMAC] <= before.XDP[xdp.PassMAC] {
		t.Errorf("fast-path passes on the MAC did not grow over the migration: %d before, %d after", before.XDP[xdp.PassMAC], after.XDP[xdp.PassMAC])
	}
	checkMigrationCounted(t, srv, qsBefore, 1)
	if v, ok := parseMetrics(t, srv.scrapeMetrics(t)).value(migrationMetric); !ok || v == 0 {
		t.Errorf("/metrics: %s is %v (present: %v), want > 0", migrationMetric, v, ok)
	}
}

// checkMigrationCounted fails unless the server followed at least want
// more clients to a new address than before, and no new address failed
// its validation.
func checkMigrationCounted(t *testing.T, srv *offloadServer, before quic.AddressValidationStats, want uint64) {
	t.Helper()
	now := srv.quicStats()
	if now.PathMigrations < before.PathMigrations+want || now.PathValidationFailures != before.PathValidationFailures {
		t.Errorf("the server followed %d clients to a new address (want >= %d) and failed %d path validations (want 0)",
			now.PathMigrations-before.PathMigrations, want, now.PathValidationFailures-before.PathValidationFailures)
	}
}

// findGtlsclient returns the path of ngtcp2's example client or skips.
func findGtlsclient(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("gtlsclient"); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
		p := filepath.Join(dir, "gtlsclient")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skip("ngtcp2's gtlsclient is not installed (apt-get install ngtcp2-client; CI installs it)")
	return ""
}

// runInNS runs bin with args in namespace ns (ip netns exec), bounded by
// offHangGuard, and returns its output (stdout and stderr together) and
// its exit error.
func runInNS(t *testing.T, ns, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), offHangGuard)
	defer cancel()
	var out syncBuffer
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	t.Logf("running %s", strings.Join(cmd.Args, " "))
	err := cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(fmt.Errorf("still running after %v, killed", offHangGuard), err)
	}
	return out.String(), err
}

// ngtcp2Run is gtlsclient's debug output, split in lines.
type ngtcp2Run []string

func parseNgtcp2Run(out string) ngtcp2Run {
	var r ngtcp2Run
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		r = append(r, sc.Text())
	}
	return r
}

// index returns the first line containing s, or -1.
func (r ngtcp2Run) index(s string) int {
	for i, l := range r {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// txDCIDs returns the destination connection IDs of the last 1-RTT
// packet gtlsclient sent before line i and of the first one after it
// ("" where there is none).
func (r ngtcp2Run) txDCIDs(i int) (before, after string) {
	for j := i - 1; j >= 0 && before == ""; j-- {
		if m := txDCID.FindStringSubmatch(r[j]); m != nil {
			before = m[1]
		}
	}
	for j := i; j < len(r) && after == ""; j++ {
		if m := txDCID.FindStringSubmatch(r[j]); m != nil {
			after = m[1]
		}
	}
	return before, after
}

// txDCID matches a 1-RTT packet sent in gtlsclient's packet log.
var txDCID = regexp.MustCompile(` pkt tx pkn=\d+ dcid=0x([0-9a-f]+) type=1RTT `)

// streamBytesTo sums the request stream's (stream 0) data that gtlsclient
// received from line i on in datagrams addressed to local.
func (r ngtcp2Run) streamBytesTo(i int, local string) int {
	total, to := 0, ""
	for _, l := range r[max(i, 0):] {
		if rest, ok := strings.CutPrefix(l, "Received packet: local="); ok {
			to, _, _ = strings.Cut(rest, " ")
			continue
		}
		if to != local || !strings.Contains(l, " frm rx ") || !strings.Contains(l, " STREAM(") || !strings.Contains(l, " id=0x0 ") {
			continue
		}
		if m := streamLen.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			total += n
		}
	}
	return total
}

// streamLen is the length of a STREAM frame in gtlsclient's frame log.
var streamLen = regexp.MustCompile(` len=(\d+) `)

// countFrom counts the lines from line i on that contain all of parts.
func (r ngtcp2Run) countFrom(i int, parts ...string) int {
	n := 0
	for _, l := range r[max(i, 0):] {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			n++
		}
	}
	return n
}

// closeReceived matches a CONNECTION_CLOSE in gtlsclient's frame log:
// the frame type (0x1c transport, 0x1d application) and the code.
var closeReceived = regexp.MustCompile(`frm rx .*CONNECTION_CLOSE\(0x(1[cd])\) error_code=\S*\(0x([0-9a-fA-F]+)\)`)

// problems returns the lines where gtlsclient reports a failure: its exit
// status alone says little. They are a library call that failed (other
// than the closing and draining states every connection ends in), a setup
// or timer message, a failed path validation, an HTTP stream reset with
// an error, or a CONNECTION_CLOSE received with one.
func (r ngtcp2Run) problems() []string {
	var bad []string
	for _, l := range r {
		switch {
		case strings.HasPrefix(l, "ngtcp2_") || strings.HasPrefix(l, "nghttp3_") || strings.HasPrefix(l, "gnutls_"):
			if !strings.HasSuffix(l, "ERR_DRAINING") && !strings.HasSuffix(l, "ERR_CLOSING") {
				bad = append(bad, l)
			}
		case hasAnyPrefix(l, "Could not", "Unable to", "Invalid", "Timeout", "Idle timeout", "Handshake timeout"):
			bad = append(bad, l)
		case strings.HasPrefix(l, "Path validation against path") && !strings.HasSuffix(l, "succeeded"):
			bad = append(bad, l)
		case strings.Contains(l, "closed with error code") && !strings.HasSuffix(l, "closed with error code 256"):
			bad = append(bad, l) // 256 is H3_NO_ERROR
		default:
			if m := closeReceived.FindStringSubmatch(l); m != nil {
				code, err := strconv.ParseUint(m[2], 16, 64)
				if err != nil || (code != 0 && (m[1] == "1c" || code != 0x100)) {
					bad = append(bad, l)
				}
			}
		}
	}
	return bad
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// runTC runs tc in namespace ns and fails the test if it fails.
func runTC(t *testing.T, ns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("tc", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("tc -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
}

// tail returns the last k lines, for failure messages.
func (r ngtcp2Run) tail(k int) string {
	return strings.Join(r[max(len(r)-k, 0):], "\n")
}

// before returns the k lines before line i.
func (r ngtcp2Run) before(i, k int) string {
	return strings.Join(r[max(i-k, 0):i], "\n")
}

// ngtcp2Attempts bounds the runs of gtlsclient per move in which it
// sends nothing after moving, which say nothing of the server.
const ngtcp2Attempts = 3

// TestOffloadNgtcp2ClientMigrates: ngtcp2's gtlsclient downloads a 4 MiB
// file from the client namespace and, 300 ms after its handshake, moves
// to a new local port: once as an active migration (a new connection ID
// and path validation), once as a NAT rebinding (same connection ID, the
// server validates the new address). The server's egress is limited to
// 32 Mbit/s, so the transfer takes about a second whatever the CPU: the
// move always happens in the middle of it. Each download completes with
// the right bytes, the client logged stream data after the move, the
// server counted the migration, and the fast path dropped nothing.
func TestOffloadNgtcp2ClientMigrates(t *testing.T) {
	client := findGtlsclient(t)
	n := newOffloadNet(t)
	runTC(t, n.nsS, "qdisc", "add", "dev", offIface, "root", "tbf", "rate", "32mbit", "burst", "32kb", "latency", "200ms")
	root := t.TempDir()
	const size = 4 << 20
	blob := writeRandomBlob(t, root, "blob.bin", size)
	srv := startOffloadFileServer(t, n, root)

	for _, mode := range ngtcp2Moves {
		t.Run(mode.name, func(t *testing.T) {
			qsBefore, dpBefore := srv.quicStats(), srv.dpStats(t)
			ngtcp2Migrates(t, srv, client, mode.name, mode.args, blob)
			st := srv.dpStats(t)
			if miss, open := st.XDP[xdp.DropMiss]-dpBefore.XDP[xdp.DropMiss], st.XDP[xdp.PassFailOpen]-dpBefore.XDP[xdp.PassFailOpen]; miss != 0 || open != 0 {
				t.Errorf("fast path: %d packets dropped as unknown, %d passed failing open; want none", miss, open)
			}
			checkMigrationCounted(t, srv, qsBefore, 1)
			if t.Failed() {
				t.Logf("datapath: %+v\nquic: %+v", datapathSummary(st), srv.quicStats())
			}
		})
	}
}

// datapathSummary is the part of the datapath's counters worth printing
// when a migration test fails.
func datapathSummary(st datapath.Stats) string {
	return fmt.Sprintf("xdp %v, agent %v, delivered %d", st.XDP, st.Agent.Packets, st.Delivered)
}

// ngtcp2Moves are the two ways gtlsclient moves to a new local port.
var ngtcp2Moves = []struct {
	name string
	args []string
}{
	{"active", nil},
	{"nat-rebinding", []string{"--nat-rebinding"}},
}

// ngtcp2Migrates runs gtlsclient in the client namespace: it downloads
// blob.bin (blob) from srv and moves to a new local port 300 ms in, as
// args say (none: active migration; --nat-rebinding). It fails the test
// unless the download is complete and byte-exact, and the client's log
// shows the server following it: data after the move arriving at the new
// port, a new connection ID for an active migration, the same one and a
// path validation by the server for a rebinding. A run in which the client
// sent nothing after moving is run again, up to ngtcp2Attempts times.
func ngtcp2Migrates(t *testing.T, srv *offloadServer, client, name string, moveArgs []string, blob []byte) {
	t.Helper()
	size := len(blob)
	var (
		run     ngtcp2Run
		err     error
		dl      string
		moved   int
		newAddr string
	)
	for attempt := 1; ; attempt++ {
		dl = t.TempDir()
		args := append([]string{
			"--exit-on-all-streams-close",
			"--download=" + dl,
			"--no-quic-dump", "--no-http-dump", // the packet and frame log, not the bytes
			"--timeout=5s", "--handshake-timeout=5s",
			"--change-local-addr=300ms",
			// After a move without path validation only the client's
			// next packet tells the server the new port, and packets
			// on the old one are ignored: delayed ACKs and small
			// windows (MAX_STREAM_DATA in flight, so a PTO) make sure
			// there is one.
			"--ack-thresh=100",
			"--max-stream-data-bidi-local=256K", "--max-stream-window=256K", "--max-data=512K", "--max-window=512K",
		}, moveArgs...)
		args = append(args, offIPS.String(), strconv.Itoa(int(offPort)), srv.url+"blob.bin")
		var out string
		out, err = runInNS(t, srv.net.nsC, client, args...)
		run = parseNgtcp2Run(out)
		moved = run.index("Local address is now ")
		if moved < 0 {
			break
		}
		newAddr = strings.TrimPrefix(run[moved], "Local address is now ")
		if run.countFrom(moved, "Sent packet: local="+newAddr+" ") > 0 {
			break
		}
		// Nothing told the server about the new port: the client
		// moved with no ACK due and nothing in flight (under load its
		// ACK timer and the move can fire in one turn of its loop),
		// then ignored everything arriving at the old port. No server
		// can follow that; the run shows nothing either way.
		if attempt == ngtcp2Attempts {
			t.Fatalf("gtlsclient sent nothing from %s after moving there, in each of %d runs:\n%s", newAddr, attempt, run.tail(40))
		}
		t.Logf("run %d: gtlsclient sent nothing from %s after moving there, so no server could follow it; running it again. Before the move:\n%s",
			attempt, newAddr, run.before(moved, 30))
	}
	for _, l := range run.problems() {
		t.Errorf("gtlsclient reported: %s", l)
	}
	if err != nil {
		t.Errorf("gtlsclient: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dl, "blob.bin")); err != nil {
		t.Errorf("gtlsclient saved nothing: %v", err)
	} else if !bytes.Equal(got, blob) {
		t.Errorf("gtlsclient saved %d bytes that differ from the %d of the file", len(got), size)
	}
	if moved < 0 {
		t.Fatalf("gtlsclient never changed its local address:\n%s", run.tail(40))
	}
	// Active migration moves to a fresh connection ID of the
	// server's; a NAT rebinding keeps the one in use.
	before, after := run.txDCIDs(moved)
	if before == "" || after == "" || (before == after) != (len(moveArgs) != 0) {
		t.Errorf("%s: connection ID before the move %q, after %q", name, before, after)
	}
	// The rest of the response arrives at the new address: the
	// server followed the client in the middle of the transfer.
	if got := run.streamBytesTo(moved, newAddr); got < size/4 {
		t.Errorf("gtlsclient received %d bytes of the response at %s, want >= %d (the server kept answering the old port, or the transfer was over)\n%s",
			got, newAddr, size/4, run.tail(40))
	} else {
		t.Logf("%s: moved to %s; %d bytes of the response arrived there", name, newAddr, got)
	}
	if moveArgs == nil {
		// Active migration: the client validates the new path.
		if run.countFrom(moved, "Path validation against path", "succeeded") == 0 {
			t.Errorf("gtlsclient logged no successful path validation after moving:\n%s", run.tail(40))
		}
	} else if run.countFrom(moved, " frm rx ", "PATH_CHALLENGE(") == 0 || run.countFrom(moved, " frm tx ", "PATH_RESPONSE(") == 0 {
		// NAT rebinding: the server must validate the new address.
		t.Errorf("the server did not validate the rebound address (no PATH_CHALLENGE received, PATH_RESPONSE sent):\n%s", run.tail(40))
	}
}
