package fileserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/fsutil"
	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// The test network, all inside 198.18.0.0/15 and namespaces the test
// creates: the client namespace holds a bridge (198.18.0.1) with two
// ports, one veth to the server namespace (trs0, 198.18.0.2, where the XDP
// datapath runs) and one to the attacker namespace (tra0, 198.18.0.3).
// Client and attacker traffic thus both arrive on the server's one
// interface.
var (
	offIPC   = netip.MustParseAddr("198.18.0.1")
	offIPS   = netip.MustParseAddr("198.18.0.2")
	offIPA   = netip.MustParseAddr("198.18.0.3")
	offMACC  = "02:00:5e:00:02:0c"
	offMACS  = "02:00:5e:00:02:05"
	offMACA  = "02:00:5e:00:02:0a"
	offPort  = uint16(4433)
	offIface = "trs0"
)

// offHangGuard bounds every request and wait: none is expected to come
// near it, it only keeps a broken build from hanging.
const offHangGuard = 20 * time.Second

type offloadNet struct {
	nsC, nsA, nsS string
}

// requireOffloadRoot skips unless the test may create namespaces and load
// XDP programs.
func requireOffloadRoot(t *testing.T) {
	t.Helper()
	netnstest.RequireRoot(t, "the integrated offload tests (network namespaces, BPF, AF_XDP)")
	netnstest.RequireAFXDP(t)
}

// newOffloadNet builds the three namespaces; Cleanup deletes them (which
// removes the veths and the bridge with them).
func newOffloadNet(t *testing.T) *offloadNet {
	t.Helper()
	requireOffloadRoot(t)
	n := &offloadNet{nsC: netnstest.New(t, "trof-c"), nsA: netnstest.New(t, "trof-a"), nsS: netnstest.New(t, "trof-s")}
	netnstest.IP(t, "-n", n.nsC, "link", "add", "br0", "address", offMACC, "type", "bridge", "stp_state", "0", "forward_delay", "0")
	netnstest.Veth(t, netnstest.End{NS: n.nsC, Dev: "cs0"}, netnstest.End{NS: n.nsS, Dev: offIface, MAC: offMACS})
	netnstest.Veth(t, netnstest.End{NS: n.nsC, Dev: "ca0"}, netnstest.End{NS: n.nsA, Dev: "tra0", MAC: offMACA})
	for _, dev := range []string{"cs0", "ca0"} {
		netnstest.IP(t, "-n", n.nsC, "link", "set", dev, "master", "br0")
		netnstest.Up(t, n.nsC, dev, netip.Prefix{})
	}
	netnstest.Up(t, n.nsC, "br0", netip.PrefixFrom(offIPC, 24))
	netnstest.Up(t, n.nsS, offIface, netip.PrefixFrom(offIPS, 24))
	netnstest.Up(t, n.nsA, "tra0", netip.PrefixFrom(offIPA, 24))
	// Static neighbours: nothing depends on ARP passing the XDP program.
	for _, nb := range []struct {
		ns, dev string
		ip      netip.Addr
		mac     string
	}{
		{n.nsC, "br0", offIPS, offMACS}, {n.nsC, "br0", offIPA, offMACA},
		{n.nsS, offIface, offIPC, offMACC}, {n.nsS, offIface, offIPA, offMACA},
		{n.nsA, "tra0", offIPS, offMACS}, {n.nsA, "tra0", offIPC, offMACC},
	} {
		netnstest.Neigh(t, nb.ns, nb.dev, nb.ip, nb.mac)
	}
	// Complete UDP checksums on the senders' side, as a real NIC delivers
	// them: a frame the program passes keeps no checksum-offload state.
	n.in(t, n.nsC, func() {
		for _, d := range []string{"br0", "cs0", "ca0"} {
			if err := netnstest.TXChecksumOff(d); err != nil {
				t.Fatal(err)
			}
		}
	})
	n.in(t, n.nsA, func() {
		if err := netnstest.TXChecksumOff("tra0"); err != nil {
			t.Fatal(err)
		}
	})
	for _, w := range []struct{ ns, dev string }{{n.nsC, "br0"}, {n.nsC, "cs0"}, {n.nsC, "ca0"}, {n.nsS, offIface}, {n.nsA, "tra0"}} {
		netnstest.WaitUp(t, w.ns, w.dev)
	}
	return n
}

// enter returns a function that runs fn in namespace ns (netnstest.In).
func (n *offloadNet) enter(ns string) func(func() error) error {
	return func(fn func() error) error { return netnstest.In(ns, fn) }
}

// in runs fn in namespace ns (t.Fatal inside fn is fine: the thread is
// switched back on the way out).
func (n *offloadNet) in(t *testing.T, ns string, fn func()) {
	t.Helper()
	if err := netnstest.In(ns, func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// offloadServer is the file server running with the XDP offload in the
// server namespace.
type offloadServer struct {
	*Server
	net  *offloadNet
	logs *syncBuffer
	url  string
	tls  *tls.Config // for clients: trusts the certificate
}

// offStaleAfter is the agent heartbeat staleness of the offload tests:
// the tests that check nothing passed failing open must not see a
// heartbeat starved by a busy CI machine (300 ms once was).
const offStaleAfter = 5 * time.Second

// startOffloadServer runs the file server on 198.18.0.2:4433 with
// --offload xdp on trs0, --retry always (so any Initial reaching the host
// without a valid token shows up as a host Retry) and a heartbeat
// staleness (offStaleAfter) long enough that a loaded machine never fails
// open by accident; TestOffloadFailOpen shortens it.
func startOffloadServer(t *testing.T, n *offloadNet) *offloadServer {
	t.Helper()
	return startOffloadServerWith(t, n, nil)
}

// startOffloadServerWith is startOffloadServer with mod adjusting the
// offload configuration first.
func startOffloadServerWith(t *testing.T, n *offloadNet, mod func(*host.Config)) *offloadServer {
	t.Helper()
	return startOffloadServerConfig(t, n, func(c *Config) {
		if mod != nil {
			mod(&c.Offload)
		}
	})
}

// startOffloadServerConfig is startOffloadServer with mod applied to the
// whole server configuration.
func startOffloadServerConfig(t *testing.T, n *offloadNet, mod func(*Config)) *offloadServer {
	t.Helper()
	srv := startNetnsServer(t, n, func(c *Config) {
		c.Retry = RetryAlways
		c.Offload = host.Config{Mode: host.ModeXDP, Iface: offIface, StaleAfter: offStaleAfter}
		mod(c)
	})
	if srv.h3.offload() == nil {
		t.Fatalf("HTTP/3 is ready without its offload\n%s", srv.logs.String())
	}
	return srv
}

// startNetnsServer runs the file server on 198.18.0.2:4433 in the server
// namespace with metrics, mod applied to its configuration, and waits
// until HTTP/3 serves.
func startNetnsServer(t *testing.T, n *offloadNet, mod func(*Config)) *offloadServer {
	t.Helper()
	var s *Server
	var logs *syncBuffer
	n.in(t, n.nsS, func() {
		s, logs = newServer(t, func(c *Config) {
			c.Addr = netip.AddrPortFrom(offIPS, offPort).String()
			c.MetricsAddr = "127.0.0.1:0"
			c.enterNetns = n.enter(n.nsS)
			mod(c)
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	select {
	case <-s.HTTP3Ready():
	case err := <-done:
		done <- err // for Cleanup
		t.Fatalf("Serve ended before HTTP/3 ran: %v\n%s", err, logs.String())
	case <-time.After(offHangGuard):
		t.Fatalf("HTTP/3 did not start\n%s", logs.String())
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.certs.current().Leaf)
	return &offloadServer{Server: s, net: n, logs: logs, url: "https://" + netip.AddrPortFrom(offIPS, offPort).String() + "/",
		tls: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
}

func (srv *offloadServer) offload(t *testing.T) *host.Offload {
	t.Helper()
	o := srv.h3.offload()
	if o == nil || o.Mode() != host.ModeXDP {
		t.Fatal("no datapath running")
	}
	return o
}

// agentStats returns the datapath's counters once the agent has published
// them all (they are complete each time a queue runs empty, which it does
// as soon as the traffic stops).
func (srv *offloadServer) dpStats(t *testing.T) datapath.Stats {
	t.Helper()
	st, err := srv.offload(t).Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st.Datapath
}

// waitDP polls the datapath's counters until ok holds.
func (srv *offloadServer) waitDP(t *testing.T, what string, ok func(datapath.Stats) bool) datapath.Stats {
	t.Helper()
	return testutil.WaitValue(t, "datapath counters: "+what, offHangGuard, func() datapath.Stats { return srv.dpStats(t) }, ok)
}

func (srv *offloadServer) quicStats() quic.AddressValidationStats {
	return srv.h3.addressValidationStats()
}

// fetch GETs the demo index with c from the client namespace and fails
// the test unless it arrives complete.
func (srv *offloadServer) fetch(t *testing.T, n *offloadNet, c *http.Client, who string) {
	t.Helper()
	n.in(t, n.nsC, func() {
		ctx, cancel := context.WithTimeout(context.Background(), offHangGuard)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", srv.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			var st host.Stats
			if o := srv.h3.offload(); o != nil {
				st, _ = o.Stats()
			}
			t.Fatalf("%s: GET %s: %v\ndatapath: %+v\nquic: %+v\n%s", who, srv.url, err, st, srv.quicStats(), srv.logs.String())
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" || !strings.Contains(string(body), "<html") {
			t.Fatalf("%s: GET %s: %d %s, %d bytes, %v", who, srv.url, resp.StatusCode, resp.Proto, len(body), err)
		}
	})
}

// ourClient returns our HTTP/3 client, dialing from the client
// namespace; store, when set, keeps NEW_TOKEN tokens across its
// connections.
func (srv *offloadServer) ourClient(t *testing.T, store quic.TokenStore) *http.Client {
	tr := &http3.Transport{
		TLSClientConfig: srv.tls.Clone(),
		QUICConfig:      &quic.Config{TokenStore: store},
		// The transport dials on a goroutine of its own: make the socket
		// in the client namespace.
		Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (c *quic.Conn, err error) {
			err = srv.net.enter(srv.net.nsC)(func() error {
				c, err = quic.DialAddrEarly(ctx, addr, tc, qc)
				return err
			})
			return c, err
		},
	}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr}
}

// quicGoClient returns quic-go's HTTP/3 client, dialing from the client
// namespace.
func (srv *offloadServer) quicGoClient(t *testing.T) *http.Client {
	tr := &quicgohttp3.Transport{
		TLSClientConfig: srv.tls.Clone(),
		Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quicgo.Config) (c *quicgo.Conn, err error) {
			err = srv.net.enter(srv.net.nsC)(func() error {
				c, err = quicgo.DialAddrEarly(ctx, addr, tc, qc)
				return err
			})
			return c, err
		},
	}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr}
}

// checkNoUnvalidated fails unless every Initial the QUIC stack saw carried
// a valid agent token: under --retry always any other Initial would have
// been answered with a host Retry, dropped or closed.
func checkNoUnvalidated(t *testing.T, st quic.AddressValidationStats) {
	t.Helper()
	if st.RetriesSent != 0 || st.InitialsDropped != 0 || st.InvalidTokenCloses != 0 || len(st.TokensRejected) != 0 {
		t.Fatalf("the QUIC stack saw unvalidated Initials: %+v", st)
	}
}

// TestOffloadBenignClients: with the integrated offload, our HTTP/3 client
// and quic-go's fetch a page from the client namespace. The agent answers
// their first Initials with Retries and forwards the second ones into the
// transport; the host accepts the agent tokens and never sends a Retry of
// its own; the fast path dropped no packet of theirs.
func TestOffloadBenignClients(t *testing.T) {
	n := newOffloadNet(t)
	srv := startOffloadServer(t, n)
	ours, theirs := srv.ourClient(t, nil), srv.quicGoClient(t)
	for i := range 3 {
		srv.fetch(t, n, ours, fmt.Sprintf("our client, request %d", i))
		srv.fetch(t, n, theirs, fmt.Sprintf("quic-go client, request %d", i))
	}
	st := srv.waitDP(t, "two Retries and two forwarded retry tokens", func(st datapath.Stats) bool {
		return st.Agent.Packets[agent.ReasonRetry] >= 2 && st.Agent.Packets[agent.ReasonRetryTokenForwarded] >= 2
	})
	// The server's IDs pass on their MAC; the cache is not needed.
	if st.Delivered < 2 || st.XDP[xdp.AgentInitial] < 4 || st.XDP[xdp.PassMAC] == 0 {
		t.Errorf("datapath: %d delivered, %d Initials redirected, %d passed on their MAC; want >= 2, >= 4, > 0",
			st.Delivered, st.XDP[xdp.AgentInitial], st.XDP[xdp.PassMAC])
	}
	if st.XDP[xdp.DropMiss] != 0 || st.XDP[xdp.PassFailOpen] != 0 {
		t.Errorf("fast path: %d benign packets dropped as unknown, %d passed failing open; want none", st.XDP[xdp.DropMiss], st.XDP[xdp.PassFailOpen])
	}
	qs := srv.quicStats()
	checkNoUnvalidated(t, qs)
	if qs.TokensAccepted["agent/retry"] < 2 {
		t.Errorf("host accepted %d agent retry tokens, want >= 2 (%+v)", qs.TokensAccepted["agent/retry"], qs)
	}
	checkMetricsExposed(t, srv)
}

// checkMetricsExposed scrapes /metrics: it carries the QUIC counters and
// the datapath's, with the traffic of the test counted.
func checkMetricsExposed(t *testing.T, srv *offloadServer) {
	t.Helper()
	body := srv.scrapeMetrics(t)
	fams := parseMetrics(t, body)
	for _, m := range []struct {
		name   string
		labels []string
	}{
		{"turboretry_quic_tokens_accepted_total", []string{"source", "agent", "type", "retry"}},
		{"turboretry_quic_retry_round_trip_seconds", []string{"source", "agent"}},
		{"turboretry_agent_packets_total", []string{"reason", "retry"}},
		{"turboretry_xdp_packets_total", []string{"reason", "pass_mac"}},
		{"turboretry_afxdp_frames_total", []string{"direction", "tx", "result", "sent"}},
		{"turboretry_agent_heartbeat_timestamp_seconds", nil},
	} {
		if v, _ := fams.value(m.name, m.labels...); v == 0 {
			t.Errorf("/metrics has no nonzero %s%v:\n%s", m.name, m.labels, body)
		}
	}
	checkDashboardQueries(t, fams, host.ModeXDP)
}

// TestOffloadFlood: the attacker namespace sends floodN Initials while
// both clients make requests. Every request completes, the agent answered
// the whole flood with Retries, and still no unvalidated Initial reached
// the QUIC stack.
func TestOffloadFlood(t *testing.T) {
	const floodN = 5000
	n := newOffloadNet(t)
	srv := startOffloadServer(t, n)

	var sender *flood.UDPSender
	n.in(t, n.nsA, func() {
		var err error
		if sender, err = flood.NewUDPSender(netip.AddrPortFrom(offIPS, offPort), 0); err != nil {
			t.Fatal(err)
		}
	})
	defer sender.Close()
	gen, err := flood.NewGenerator(flood.GeneratorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg       sync.WaitGroup
		fst      flood.Stats
		floodErr error
	)
	wg.Go(func() {
		// Paced so the AF_XDP rings of a shared CI machine keep up: the
		// test is about correctness, the benchmarks are about rate.
		fst, floodErr = flood.Run(context.Background(), flood.RunConfig{Count: floodN, Duration: offHangGuard, Rate: 5000}, gen, sender)
	})
	ours, theirs := srv.ourClient(t, nil), srv.quicGoClient(t)
	for i := range 5 {
		// Fresh connections during the flood: the handshakes compete
		// with it.
		srv.fetch(t, n, srv.ourClient(t, nil), fmt.Sprintf("our new client %d", i))
		srv.fetch(t, n, ours, fmt.Sprintf("our client, request %d", i))
		srv.fetch(t, n, theirs, fmt.Sprintf("quic-go client, request %d", i))
	}
	wg.Wait()
	if floodErr != nil || fst.Sent != floodN {
		t.Fatalf("flood: %+v, %v; want %d sent", fst, floodErr, floodN)
	}
	srv.fetch(t, n, srv.quicGoClient(t), "quic-go client after the flood")
	st := srv.waitDP(t, "a Retry for every flood Initial", func(st datapath.Stats) bool {
		return st.Agent.Packets[agent.ReasonRetry] >= floodN+6
	})
	if st.ReplyFailed != 0 {
		t.Errorf("%d Retries could not be sent", st.ReplyFailed)
	}
	if st.XDP[xdp.DropMiss] != 0 || st.XDP[xdp.PassFailOpen] != 0 {
		t.Errorf("fast path: %d packets dropped as unknown, %d passed failing open; want none", st.XDP[xdp.DropMiss], st.XDP[xdp.PassFailOpen])
	}
	checkNoUnvalidated(t, srv.quicStats())
}

// TestOffloadFailOpen pauses the agent mid-run. Once its heartbeat is
// stale the program passes everything: requests keep completing through
// the host's own Retry, and a connection made meanwhile has its connection
// IDs in the fast path anyway. After Resume the agent filters again and
// accepts the NEW_TOKEN token the host issued while it was paused.
func TestOffloadFailOpen(t *testing.T) {
	n := newOffloadNet(t)
	// A short staleness, so that fail-open comes quickly after Pause, but
	// not so short that a heartbeat starved on a loaded machine fails open
	// when the test needs the agent (the NEW_TOKEN token at the end): it
	// takes a second without a beat (they come every 100 ms).
	srv := startOffloadServerWith(t, n, func(c *host.Config) { c.StaleAfter = time.Second })
	srv.fetch(t, n, srv.ourClient(t, nil), "our client before the pause")
	dp := srv.offload(t)

	dp.Pause()
	store := quic.NewLRUTokenStore(4, 4)
	during := srv.ourClient(t, store)
	// Initials sent before the heartbeat goes stale are dropped by the
	// paused agent; the clients retransmit and get through once it is.
	srv.fetch(t, n, during, "our client during the pause")
	srv.fetch(t, n, srv.quicGoClient(t), "quic-go client during the pause")
	qs := srv.quicStats()
	if qs.RetriesSent < 2 || qs.TokensAccepted["host/retry"] < 2 {
		t.Fatalf("during the pause the host sent %d Retries and accepted %d of its retry tokens; want >= 2 each (%+v)",
			qs.RetriesSent, qs.TokensAccepted["host/retry"], qs)
	}
	if st := srv.dpStats(t); st.XDP[xdp.PassFailOpen] == 0 {
		t.Fatalf("nothing passed failing open: %v", st.XDP)
	}

	dp.Resume()
	// Filtering resumes with the next heartbeat: fetch with fresh clients
	// until the agent answers one with its Retry.
	retries := srv.dpStats(t).Agent.Packets[agent.ReasonRetry]
	for i := 0; ; i++ {
		srv.fetch(t, n, srv.ourClient(t, nil), fmt.Sprintf("our client %d after Resume", i))
		if srv.dpStats(t).Agent.Packets[agent.ReasonRetry] > retries {
			break
		}
		if i == 50 {
			t.Fatal("the agent sent no Retry after Resume")
		}
	}
	// The connection made during the pause carries on: the stack admitted
	// its connection IDs to the fast path although the agent was paused.
	srv.fetch(t, n, during, "our client's connection from the pause")
	if st := srv.dpStats(t); st.XDP[xdp.DropMiss] != 0 {
		t.Errorf("the fast path dropped %d packets of known connections", st.XDP[xdp.DropMiss])
	}
	// A new connection spends the host's NEW_TOKEN token: the agent
	// forwards it (only the host issues new_token tokens) and the host
	// accepts it.
	srv.fetch(t, n, srv.ourClient(t, store), "our client with the host's NEW_TOKEN token")
	srv.waitDP(t, "the host's new_token token forwarded", func(st datapath.Stats) bool {
		return st.Agent.Packets[agent.ReasonNewTokenForwarded] >= 1
	})
	if qs := srv.quicStats(); qs.TokensAccepted["host/new_token"] < 1 {
		t.Errorf("the host accepted no new_token token of its own: %+v", qs)
	}
}

// TestOffloadIssuedIDsPass: every connection ID the stack issues, the
// handshake SCIDs and the NEW_CONNECTION_ID ones a client may switch to
// (migration, rotation), passes the fast path on its MAC, with nothing
// inserted into the cache. The test sends a short-header packet to each
// of them from the client namespace, then one to an ID never issued: that
// one, and only that one, is dropped.
func TestOffloadIssuedIDsPass(t *testing.T) {
	n := newOffloadNet(t)
	var (
		mu   sync.Mutex
		cids [][]byte
		errs []error
	)
	srv := startOffloadServerWith(t, n, func(c *host.Config) {
		c.Admitted = func(cid []byte, err error) {
			mu.Lock()
			defer mu.Unlock()
			if len(cid) == defaultIDLen {
				cids = append(cids, append([]byte(nil), cid...))
				if err != nil {
					errs = append(errs, err)
				}
			}
		}
	})
	const conns = 2
	srv.fetch(t, n, srv.ourClient(t, nil), "our client")
	srv.fetch(t, n, srv.quicGoClient(t), "quic-go client")
	mu.Lock()
	issued := append([][]byte(nil), cids...)
	if len(errs) != 0 {
		t.Errorf("the fast path refused %d connection IDs: %v", len(errs), errs)
	}
	mu.Unlock()
	// One handshake SCID per connection and at least one spare ID through
	// NEW_CONNECTION_ID.
	if len(issued) < 2*conns {
		t.Fatalf("the stack announced %d connection IDs for %d connections, want >= %d", len(issued), conns, 2*conns)
	}

	t.Logf("%d connection IDs admitted for %d connections", len(issued), conns)
	before := srv.dpStats(t)
	if before.XDP[xdp.DropMiss] != 0 {
		t.Fatalf("the fast path dropped %d packets of the clients", before.XDP[xdp.DropMiss])
	}
	unknown := bytes.Repeat([]byte{0xde, 0xad}, defaultIDLen/2)
	n.in(t, n.nsC, func() {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(offIPS, offPort)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, cid := range append(issued, unknown) {
			// A short header (fixed bit set) and a payload no key opens:
			// the stack discards it; only the program's verdict matters.
			pkt := append([]byte{0x40}, cid...)
			pkt = append(pkt, make([]byte, 40)...)
			if _, err := c.Write(pkt); err != nil {
				t.Fatal(err)
			}
		}
	})
	// One queue processes in order: once the last probe is dropped, all
	// the others have been judged.
	after := srv.waitDP(t, "the unknown ID dropped", func(st datapath.Stats) bool { return st.XDP[xdp.DropMiss] >= 1 })
	if after.XDP[xdp.DropMiss] != 1 {
		t.Errorf("%d probes dropped as unknown, want only the one to the never-issued ID", after.XDP[xdp.DropMiss])
	}
	if passed := after.XDP[xdp.PassMAC] - before.XDP[xdp.PassMAC]; passed < uint64(len(issued)) {
		t.Errorf("%d of %d probes to issued IDs passed the fast path on their MAC", passed, len(issued))
	}
	if after.XDP[xdp.PassHit] != before.XDP[xdp.PassHit] {
		t.Errorf("%d probes passed by a cache entry: the server's IDs were inserted", after.XDP[xdp.PassHit]-before.XDP[xdp.PassHit])
	}
}

// TestOffloadSecretReload: after the root secret file changes and the
// server reloads (SIGHUP), agent and host switch together: a new client's
// agent Retry token is accepted by the host, and the stack still sees no
// unvalidated Initial (no INVALID_TOKEN closes, no host Retries).
func TestOffloadSecretReload(t *testing.T) {
	n := newOffloadNet(t)
	srv := startOffloadServer(t, n)
	srv.fetch(t, n, srv.ourClient(t, nil), "our client before the reload")

	secret, err := token.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteFileAtomic(srv.SecretPath(), []byte(token.FormatSecret(secret)), 0o600, true); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	before := srv.quicStats().TokensAccepted["agent/retry"]
	srv.fetch(t, n, srv.ourClient(t, nil), "our client after the reload")
	srv.fetch(t, n, srv.quicGoClient(t), "quic-go client after the reload")
	qs := srv.quicStats()
	checkNoUnvalidated(t, qs)
	if qs.TokensAccepted["agent/retry"] < before+2 {
		t.Errorf("host accepted %d agent retry tokens after the reload, want 2 more than %d (%+v)", qs.TokensAccepted["agent/retry"], before, qs)
	}
}
