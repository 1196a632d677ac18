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
	pnBenign      = 32 // benign clients, each in a /24 of its own
	pnFetches     = 2  // fetches per benign client, one after the other
	pnMaxConns    = 128
	pnMaxHs       = 64
	pnAttackPause = 100 * time.Millisecond // an attacker address's pause after a refusal
)

func pnBenignIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(10 + i), 1}) }

// TestPrefixAdmissionOneSlash24 is issue 27's namespace test of the stack's
// admission by source prefix: `turboretry serve` (admission on, 128
// connections, 64 handshakes, Retry always) in a namespace; 256 real
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
	netnstest.RequireRoot(t, "the prefix admission namespace test (256 addresses on a veth)")
	nsS, nsC := netnstest.New(t, "trpa-s"), netnstest.New(t, "trpa-c")
	netnstest.Veth(t, netnstest.End{NS: nsC, Dev: "pac0"}, netnstest.End{NS: nsS, Dev: "pas0"})
	netnstest.Up(t, nsS, "pas0", netip.PrefixFrom(pnServerIP, 16))
	netnstest.Up(t, nsC, "pac0", netip.PrefixFrom(pnBenignIP(0), 16))
	var batch strings.Builder
	for a := pnAttackNet.Addr(); pnAttackNet.Contains(a); a = a.Next() {
		fmt.Fprintf(&batch, "addr add %s/16 dev pac0\n", a)
	}
	for i := 1; i < pnBenign; i++ {
		fmt.Fprintf(&batch, "addr add %s/16 dev pac0\n", pnBenignIP(i))
	}
	file := filepath.Join(t.TempDir(), "addrs")
	if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "-n", nsC, "-batch", file)
	netnstest.WaitUp(t, nsS, "pas0")
	netnstest.WaitUp(t, nsC, "pac0")

	s := startServerWith(t, serveOptions{
		ns: nsS, clientNS: nsC, serverName: "localhost",
		args: []string{"--addr", netip.AddrPortFrom(pnServerIP, 4433).String(), "--prefix-admission=true",
			"--max-conns", fmt.Sprint(pnMaxConns), "--max-handshakes", fmt.Sprint(pnMaxHs), "--retry", "always"},
	})
	ctx := ctxFor(t)

	unloaded, failed := pnBenignRound(ctx, t, s)
	if failed != 0 {
		t.Fatalf("%d benign fetches failed before the attack", failed)
	}

	// The attack: one goroutine per attacker address.
	attackCtx, stopAttack := context.WithCancel(ctx)
	var (
		wg                        sync.WaitGroup
		mu                        sync.Mutex
		held                      []*quicgo.Conn
		refusals, otherErrs, dial int
		firstErr                  error
	)
	defer func() {
		stopAttack()
		wg.Wait()
		for _, c := range held {
			_ = c.CloseWithError(0, "")
		}
	}()
	tlsConf := s.clientTLS("h3")
	qconf := &quicgo.Config{KeepAlivePeriod: 10 * time.Second, HandshakeIdleTimeout: 10 * time.Second}
	raddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(pnServerIP, 4433))
	for a := pnAttackNet.Addr(); pnAttackNet.Contains(a); a = a.Next() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attackCtx.Err() == nil {
				c, err := pnDial(attackCtx, s, a, raddr, tlsConf, qconf)
				mu.Lock()
				dial++
				switch {
				case err == nil:
					held = append(held, c)
				case isRefused(err):
					refusals++
				case attackCtx.Err() == nil:
					otherErrs++
					if firstErr == nil {
						firstErr = err
					}
				}
				mu.Unlock()
				if err != nil {
					select {
					case <-attackCtx.Done():
					case <-time.After(pnAttackPause):
					}
				}
			}
		}()
	}
	attackerHeld := func() int { mu.Lock(); defer mu.Unlock(); return len(held) }
	// Until the attacker holds its share and has been refused a while.
	deadline := time.Now().Add(30 * time.Second)
	for attackerHeld() < pnMaxConns/2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	loaded, failed := pnBenignRound(ctx, t, s)
	m := s.scrape()
	stopAttack()
	wg.Wait()

	mu.Lock()
	n, r, o, d := len(held), refusals, otherErrs, dial
	mu.Unlock()
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

// pnBenignRound runs pnFetches fetches of / from each benign address, 8
// clients at a time, and returns the times to first byte of those that
// succeeded and the number that failed.
func pnBenignRound(ctx context.Context, t *testing.T, s *server) (ttfb []time.Duration, failed int) {
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range pnBenign {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for range pnFetches {
				d, err := pnFetch(ctx, s, pnBenignIP(i))
				mu.Lock()
				if err != nil {
					failed++
					t.Logf("benign client %v: %v", pnBenignIP(i), err)
				} else {
					ttfb = append(ttfb, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ttfb, failed
}

// pnFetch GETs / over a new quic-go HTTP/3 connection from local and
// returns the time from the dial to the response's headers.
func pnFetch(ctx context.Context, s *server, local netip.Addr) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tr := &quicgohttp3.Transport{TLSClientConfig: s.clientTLS(),
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
