//go:build linux

package abuse

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// The one-/24 attack's network: the server's namespace (198.19.255.1) and
// the clients', whose veth holds the 256 addresses of the attacker's /24
// (198.19.1.0-255) and one address in each of the benign clients' /24s
// (198.19.10.1, 198.19.11.1, ...), all real: the server's replies reach
// them, so every client completes Retry and handshake.
var (
	pnServerIP  = netip.MustParseAddr("198.19.255.1")
	pnAttackNet = netip.MustParsePrefix("198.19.1.0/24")
)

const (
	pnBenign  = 32 // benign clients, each in a /24 of its own
	pnFetches = 2  // fetches per benign client, one after the other
	// The server's limits: small, so that the benign clients' closed
	// connections matter. They give their slots back when they start
	// draining; when they held them for the draining period (3 PTO) they
	// filled the few slots the attackers leave, and up to half of the
	// returning clients were refused (docs/abuse.md).
	pnMaxConns    = 128
	pnMaxHs       = 128
	pnAttackPause = 100 * time.Millisecond // an attacker address's pause after a refusal
)

func pnBenignIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(10 + i), 1}) }

// TestPrefixAdmissionOneSlash24 is issue 27's namespace test of the stack's
// admission by source prefix: `turboretry serve` (admission on, 128
// connections, 128 handshakes, Retry always) in a namespace; 256 real
// addresses of one /24 run quic-go clients that pass Retry, complete their
// handshakes and hold every connection they get, and dial again after
// each refusal (100 ms later: the 2 shared cores bound how fast); then 32
// benign clients from 32 other /24s fetch the page twice each, with
// quic-go, as they did before the attack. It asserts that every benign
// fetch succeeds and that the attacker's /24 holds at most half of the
// connections (its share while alone; less once others hold some), and
// reports the benign time to first byte with and without the attack
// (not asserted: wall-clock figures on a shared machine). Needs root.
func TestPrefixAdmissionOneSlash24(t *testing.T) {
	var addrs []netip.Addr
	for a := pnAttackNet.Addr(); pnAttackNet.Contains(a); a = a.Next() {
		addrs = append(addrs, a)
	}
	s := pnStartServer(t, pnBenignAddrs(0, pnBenign), addrs)
	ctx := ctxFor(t)

	unloaded, failed := pnBenignRound(ctx, t, s, pnBenignAddrs(0, pnBenign), nil)
	if failed != 0 {
		t.Fatalf("%d benign fetches failed before the attack", failed)
	}
	a := pnAttack(ctx, t, s, addrs, pnMaxConns/2)
	loaded, failed := pnBenignRound(ctx, t, s, pnBenignAddrs(0, pnBenign), nil)
	m := s.scrape()
	n, r, o, d, firstErr := a.stop()
	t.Logf("attacker /24: %d connections held, %d dials, %d refused (CONNECTION_REFUSED), %d other errors (first: %v)", n, d, r, o, firstErr)
	t.Logf("server: refused prefix_connections %.0f, prefix_handshakes %.0f, prefix_rate %.0f, connection_cap %.0f",
		m[series("turboretry_quic_refused_total", "reason", "prefix_connections")], m[series("turboretry_quic_refused_total", "reason", "prefix_handshakes")],
		m[series("turboretry_quic_refused_total", "reason", "prefix_rate")], m[series("turboretry_quic_refused_total", "reason", "connection_cap")])
	t.Logf("benign time to first byte: unloaded p50 %v p95 %v; under attack p50 %v p95 %v (%d of %d fetches failed)",
		pct(unloaded, 50), pct(unloaded, 95), pct(loaded, 50), pct(loaded, 95), failed, pnBenign*pnFetches)
	if failed != 0 {
		t.Errorf("%d of %d benign fetches failed under the attack", failed, pnBenign*pnFetches)
	}
	if n > pnMaxConns/2 {
		t.Errorf("the attacker's /24 holds %d connections, more than half of %d", n, pnMaxConns)
	}
	if r == 0 {
		t.Error("the attacker was never refused: the attack did not reach the limits")
	}
	checkNoPanics(t, m)
}

// pnBenignAddrs are the benign addresses from, from+1, ... (n of them),
// each in a /24 of its own.
func pnBenignAddrs(from, n int) []netip.Addr {
	var as []netip.Addr
	for i := range n {
		as = append(as, pnBenignIP(from+i))
	}
	return as
}

// pnStartServer builds the two namespaces, gives the clients' veth every
// address of benign and attackers (all in 198.18.0.0/15, as is the
// server's), and starts `turboretry serve` with admission on, the small
// limits above, Retry always, and args.
func pnStartServer(t *testing.T, benign, attackers []netip.Addr, args ...string) *server {
	netnstest.RequireRoot(t, "the prefix admission namespace tests (hundreds of addresses on a veth)")
	nsS, nsC := netnstest.New(t, "trpa-s"), netnstest.New(t, "trpa-c")
	netnstest.Veth(t, netnstest.End{NS: nsC, Dev: "pac0"}, netnstest.End{NS: nsS, Dev: "pas0"})
	netnstest.Up(t, nsS, "pas0", netip.PrefixFrom(pnServerIP, 15))
	netnstest.Up(t, nsC, "pac0", netip.PrefixFrom(benign[0], 15))
	var batch strings.Builder
	for _, a := range append(slices.Clone(benign[1:]), attackers...) {
		fmt.Fprintf(&batch, "addr add %s/15 dev pac0\n", a)
	}
	file := filepath.Join(t.TempDir(), "addrs")
	if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "-n", nsC, "-batch", file)
	netnstest.WaitUp(t, nsS, "pas0")
	netnstest.WaitUp(t, nsC, "pac0")
	return startServerWith(t, serveOptions{
		ns: nsS, clientNS: nsC, serverName: "localhost",
		args: append([]string{"--addr", netip.AddrPortFrom(pnServerIP, 4433).String(), "--prefix-admission=true",
			"--max-conns", fmt.Sprint(pnMaxConns), "--max-handshakes", fmt.Sprint(pnMaxHs), "--retry", "always"}, args...),
	})
}

// pnAttacker is a running attack: one goroutine per address dials
// (quic-go: Retry, handshake), holds every connection it gets, and dials
// again, pnAttackPause after a refusal.
type pnAttacker struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu                        sync.Mutex
	held                      []*quicgo.Conn
	refusals, otherErrs, dial int
	firstErr                  error
}

// pnAttack starts the attack from addrs and returns once it holds want
// connections (or after 30 s), and a second more of refusals.
func pnAttack(ctx context.Context, t *testing.T, s *server, addrs []netip.Addr, want int) *pnAttacker {
	actx, cancel := context.WithCancel(ctx)
	a := &pnAttacker{cancel: cancel}
	t.Cleanup(func() { a.stop() })
	tlsConf := s.clientTLS("h3")
	qconf := &quicgo.Config{KeepAlivePeriod: 10 * time.Second, HandshakeIdleTimeout: 10 * time.Second}
	raddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(pnServerIP, 4433))
	for _, addr := range addrs {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for actx.Err() == nil {
				c, err := pnDial(actx, s, addr, raddr, tlsConf, qconf)
				a.mu.Lock()
				a.dial++
				switch {
				case err == nil:
					a.held = append(a.held, c)
				case isRefused(err):
					a.refusals++
				case actx.Err() == nil:
					a.otherErrs++
					if a.firstErr == nil {
						a.firstErr = err
					}
				}
				a.mu.Unlock()
				if err != nil {
					select {
					case <-actx.Done():
					case <-time.After(pnAttackPause):
					}
				}
			}
		}()
	}
	held := func() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.held) }
	for deadline := time.Now().Add(30 * time.Second); held() < want && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	return a
}

// stop ends the attack, closes what it held (once) and returns its counts.
func (a *pnAttacker) stop() (held, refusals, otherErrs, dials int, firstErr error) {
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	held = len(a.held)
	for _, c := range a.held {
		_ = c.CloseWithError(0, "")
	}
	a.held = nil
	return held, a.refusals, a.otherErrs, a.dial, a.firstErr
}

// pnDial dials from local (its own UDP socket in the clients' namespace).
func pnDial(ctx context.Context, s *server, local netip.Addr, raddr *net.UDPAddr, tc *tls.Config, qc *quicgo.Config) (*quicgo.Conn, error) {
	var udp *net.UDPConn
	if err := s.inClientNS(func() (err error) {
		udp, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
		return err
	}); err != nil {
		return nil, err
	}
	tr := &quicgo.Transport{Conn: udp}
	c, err := tr.Dial(ctx, raddr, tc, qc)
	if err != nil {
		tr.Close()
		return nil, err
	}
	context.AfterFunc(c.Context(), func() { tr.Close() })
	return c, nil
}

// pnBenignRound runs pnFetches fetches of / from each of addrs, 8 clients
// at a time, and returns the times to first byte of those that succeeded
// and the number that failed. With stores, client i keeps its NEW_TOKEN
// tokens in stores[i] (a returning client).
func pnBenignRound(ctx context.Context, t *testing.T, s *server, addrs []netip.Addr, stores []quicgo.TokenStore) (ttfb []time.Duration, failed int) {
	ttfb, errs := pnBenignFetches(ctx, s, addrs, stores, pnFetches)
	for _, err := range errs {
		t.Log("benign fetch:", err)
	}
	return ttfb, len(errs)
}

// pnBenignFetches is pnBenignRound with fetches per client, returning the
// errors.
func pnBenignFetches(ctx context.Context, s *server, addrs []netip.Addr, stores []quicgo.TokenStore, fetches int) (ttfb []time.Duration, errs []error) {
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, addr := range addrs {
		var store quicgo.TokenStore
		if stores != nil {
			store = stores[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for range fetches {
				d, err := pnFetch(ctx, s, addr, store)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("client %v: %w", addr, err))
				} else {
					ttfb = append(ttfb, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ttfb, errs
}

// pnFetch GETs / over a new quic-go HTTP/3 connection from local and
// returns the time from the dial to the response's headers.
func pnFetch(ctx context.Context, s *server, local netip.Addr, store quicgo.TokenStore) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tr := &quicgohttp3.Transport{TLSClientConfig: s.clientTLS(), QUICConfig: &quicgo.Config{TokenStore: store},
		Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quicgo.Config) (*quicgo.Conn, error) {
			raddr, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return pnDial(ctx, s, local, raddr, tc, qc)
		}}
	defer tr.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTemporaryRedirect {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return d, nil
}

// pct is the p-th percentile of ds (nearest rank), 0 for none.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// TestPrefixAdmissionSpread is issue 27's spread attack: 256 attacker
// addresses, one in each of 256 /24s (198.18.0-255.1), hold every
// connection they can get (the whole cap but the returning clients'
// reserve: 112 of 128) and dial again after each refusal. 32 returning
// clients (quic-go with a token store, holding a NEW_TOKEN token from a
// visit before the attack) fetch once each: every fetch must succeed, on
// the reserve (16: the visits' closed connections must give their slots
// back as they close). 32 fresh clients fetch once too: what fair sharing
// gives them is logged, and each that is not served must be refused with
// CONNECTION_REFUSED, never left to time out. Needs root.
func TestPrefixAdmissionSpread(t *testing.T) {
	var attackers []netip.Addr
	for i := range 256 {
		attackers = append(attackers, netip.AddrFrom4([4]byte{198, 18, byte(i), 1}))
	}
	returning, fresh := pnBenignAddrs(0, pnBenign), pnBenignAddrs(40, pnBenign)
	// The returning clients' reserve is 16 of the 128 (1/8).
	const maxConns = pnMaxConns
	s := pnStartServer(t, append(slices.Clone(returning), fresh...), attackers)
	ctx := ctxFor(t)
	stores := make([]quicgo.TokenStore, len(returning))
	for i := range stores {
		stores[i] = quicgo.NewLRUTokenStore(1, 4)
	}
	unloaded, errs := pnBenignFetches(ctx, s, returning, stores, 1)
	if len(errs) != 0 {
		t.Fatalf("before the attack: %v", errs)
	}
	a := pnAttack(ctx, t, s, attackers, maxConns-maxConns/8)
	ret, retErrs := pnBenignFetches(ctx, s, returning, stores, 1)
	served, freshErrs := pnBenignFetches(ctx, s, fresh, nil, 1)
	m := s.scrape()
	n, r, o, d, firstErr := a.stop()

	t.Logf("attackers (256 /24s): %d connections held, %d dials, %d refused, %d other errors (first: %v)", n, d, r, o, firstErr)
	t.Logf("server: refused connection_cap %.0f, prefix_connections %.0f, prefix_handshakes %.0f",
		m[series("turboretry_quic_refused_total", "reason", "connection_cap")],
		m[series("turboretry_quic_refused_total", "reason", "prefix_connections")], m[series("turboretry_quic_refused_total", "reason", "prefix_handshakes")])
	t.Logf("returning: %d of %d fetches served, time to first byte p50 %v p95 %v (before the attack: p50 %v p95 %v)",
		len(ret), pnBenign, pct(ret, 50), pct(ret, 95), pct(unloaded, 50), pct(unloaded, 95))
	t.Logf("fresh: %d of %d fetches served, %d refused", len(served), pnBenign, len(freshErrs))
	for _, err := range retErrs {
		t.Errorf("returning client under the attack: %v", err)
	}
	for _, err := range freshErrs {
		if !isRefused(err) {
			t.Errorf("a fresh client was not refused with CONNECTION_REFUSED: %v", err)
		}
	}
	if n < maxConns/2 {
		t.Errorf("the attackers hold only %d connections: the attack did not fill the cap", n)
	}
	checkNoPanics(t, m)
}
