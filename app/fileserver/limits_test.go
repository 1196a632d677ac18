package fileserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// oddLimits returns limits that differ from the defaults in every field.
func oddLimits() Limits {
	return Limits{
		MaxConnections: 7, MaxHandshakes: 5, AcceptBacklog: 3, MaxStreams: 11, MaxUniStreams: 4,
		HandshakeTimeout: 3 * time.Second, IdleTimeout: 45 * time.Second, ConnSendBuffer: 1 << 20, SendBuffer: 2 << 20, ReceiveBuffer: 3 << 20,
		RetryThreshold: 2, UnvalidatedBudget: 1000,
		MaxHeaderBytes: 2000, ConnHeaderBytes: 5000,
		HeaderTimeout: 4 * time.Second, UniStreamTimeout: 6 * time.Second, WriteStallTimeout: 7 * time.Second,
		PrefixAdmission: true, PrefixLen4: 20, PrefixLen6: 48, PrefixRate: 3, PrefixBurst: 9, ReturningReserve: 0.25, MaxPrefixes: 10,
	}
}

// TestLimitsReachTheLibraries: every limit lands in the field of the
// quic, http3 or net/http configuration it names; 0 ("none") becomes the
// libraries' negative value, not their default.
func TestLimitsReachTheLibraries(t *testing.T) {
	l := oddLimits()
	q := l.quicConfig()
	if q.MaxConnections != 7 || q.MaxHandshakes != 5 || q.AcceptBacklog != 3 || q.MaxIncomingStreams != 11 || q.MaxIncomingUniStreams != 4 ||
		q.HandshakeIdleTimeout != 3*time.Second || q.MaxConnectionSendBuffer != 1<<20 || q.MaxIdleTimeout != 45*time.Second || !q.Allow0RTT {
		t.Errorf("quic.Config %+v", q)
	}
	if a := q.Admission; a == nil || *a != (quic.AdmissionConfig{IPv4PrefixLen: 20, IPv6PrefixLen: 48, NewConnectionRate: 3,
		NewConnectionBurst: 9, ReturningReserve: 0.25, MaxPrefixes: 10}) {
		t.Errorf("quic.AdmissionConfig %+v", a)
	}
	var tr quic.Transport
	l.applyTransport(&tr)
	if tr.MaxSendBuffer != 2<<20 || tr.MaxReceiveBuffer != 3<<20 {
		t.Errorf("Transport budgets %d, %d", tr.MaxSendBuffer, tr.MaxReceiveBuffer)
	}
	var srv http3.Server
	l.applyHTTP3(&srv)
	if srv.MaxHeaderBytes != 2000 || srv.MaxConnHeaderBytes != 5000 || srv.ReadHeaderTimeout != 4*time.Second ||
		srv.UniStreamTimeout != 6*time.Second || srv.WriteStallTimeout != 7*time.Second {
		t.Errorf("http3.Server limits %d %d %v %v %v", srv.MaxHeaderBytes, srv.MaxConnHeaderBytes, srv.ReadHeaderTimeout, srv.UniStreamTimeout, srv.WriteStallTimeout)
	}

	l.MaxConnections, l.MaxHandshakes, l.HeaderTimeout, l.UniStreamTimeout, l.WriteStallTimeout = 0, 0, 0, 0, 0
	q = l.quicConfig()
	l.applyHTTP3(&srv)
	if q.MaxConnections >= 0 || q.MaxHandshakes >= 0 || srv.ReadHeaderTimeout >= 0 || srv.UniStreamTimeout >= 0 || srv.WriteStallTimeout >= 0 {
		t.Errorf("0 (none) not passed as negative: %+v %v %v %v", q, srv.ReadHeaderTimeout, srv.UniStreamTimeout, srv.WriteStallTimeout)
	}

	l.ReturningReserve = 0
	if q := l.quicConfig(); q.Admission.ReturningReserve >= 0 {
		t.Errorf("no reserve (0) passed as %v, not negative", q.Admission.ReturningReserve)
	}
	l.PrefixAdmission = false
	if q := l.quicConfig(); q.Admission != nil {
		t.Errorf("admission off passed as %+v", q.Admission)
	}

	// --retry auto: Retries past the threshold or the budget.
	odd := oddLimits()
	p := odd.addressPolicy(RetryAuto)
	for _, tc := range []struct {
		n     int
		bytes int64
		want  quic.AddressDecision
	}{{2, 1000, quic.AddressAccept}, {3, 0, quic.AddressRetry}, {1, 1001, quic.AddressRetry}} {
		if got := p(&quic.InitialInfo{HandshakesInFlight: tc.n, UnvalidatedBytes: tc.bytes}); got != tc.want {
			t.Errorf("auto policy with %d unvalidated holding %d bytes: %v, want %v", tc.n, tc.bytes, got, tc.want)
		}
	}
}

func TestLimitsChecked(t *testing.T) {
	d := DefaultLimits()
	if err := d.Check(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, mod := range map[string]func(*Limits){
		"negative connections":  func(l *Limits) { l.MaxConnections = -1 },
		"no backlog":            func(l *Limits) { l.AcceptBacklog = 0 },
		"no streams":            func(l *Limits) { l.MaxStreams = 0 },
		"two uni streams":       func(l *Limits) { l.MaxUniStreams = 2 },
		"no handshake time":     func(l *Limits) { l.HandshakeTimeout = 0 },
		"negative idle timeout": func(l *Limits) { l.IdleTimeout = -time.Second },
		"no send buffer":        func(l *Limits) { l.SendBuffer = 0 },
		"negative threshold":    func(l *Limits) { l.RetryThreshold = -1 },
		"no header bytes":       func(l *Limits) { l.MaxHeaderBytes = 0 },
		"budget below a header": func(l *Limits) { l.ConnHeaderBytes = l.MaxHeaderBytes - 1 },
		"negative timeout":      func(l *Limits) { l.WriteStallTimeout = -time.Second },
		"prefix /0":             func(l *Limits) { l.PrefixLen4 = 0 },
		"IPv6 prefix /129":      func(l *Limits) { l.PrefixLen6 = 129 },
		"negative prefix rate":  func(l *Limits) { l.PrefixRate = -1 },
		"reserve all":           func(l *Limits) { l.ReturningReserve = 1 },
		"no prefixes":           func(l *Limits) { l.MaxPrefixes = 0 },
	} {
		l := DefaultLimits()
		mod(&l)
		if err := l.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := New(Config{StateDir: t.TempDir(), Addr: "127.0.0.1:0", Limits: &l}); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestServeConnectionCap: with --max-conns 2, two HTTP/3 clients (ours)
// hold their connections and a third, quic-go's, is refused with
// CONNECTION_REFUSED before its handshake; when one of the first two goes,
// quic-go's client gets in.
func TestServeConnectionCap(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxConnections = 2
	// The cap is per worker (docs/fileserver.md): one worker holds all.
	ts := startServer(t, func(c *Config) { c.Limits, c.Workers = &lim, 1 })
	var holders []*http3.Transport
	for range 2 {
		tr := ts.h3Transport()
		defer tr.Close()
		if resp, _ := get(t, &http.Client{Transport: tr}, "GET", ts.URL()); resp.StatusCode != 200 {
			t.Fatalf("holder: %d", resp.StatusCode)
		}
		holders = append(holders, tr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a broken build only
	defer cancel()
	addr := strings.TrimSuffix(strings.TrimPrefix(ts.URL(), "https://"), "/")
	tlsConf := ts.h3TLS()
	tlsConf.NextProtos = []string{"h3"}
	_, err := quicgo.DialAddr(ctx, addr, tlsConf, &quicgo.Config{})
	var te *quicgo.TransportError
	if !errors.As(err, &te) || te.ErrorCode != quicgo.ConnectionRefused || !te.Remote {
		t.Fatalf("third client: %v, want CONNECTION_REFUSED from the server", err)
	}
	holders[0].Close()
	tr := ts.quicGoH3Transport()
	defer tr.Close()
	eventually(t, func() error { // the server sees the close a moment later
		resp, err := (&http.Client{Transport: tr}).Get(ts.URL())
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

// TestServeHeaderLimit: --max-header-bytes holds on HTTPS (HTTP/1.1, HTTP/2)
// and HTTP/3 (our client and quic-go's): a request with a larger header
// is answered 431, or, by an HTTP/2 or HTTP/3 client that respects the
// limit the server announced in its SETTINGS, not sent at all; a normal
// one is served.
func TestServeHeaderLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxHeaderBytes, lim.ConnHeaderBytes = 4096, 8192
	ts := startServer(t, func(c *Config) { c.Limits = &lim })
	big := strings.Repeat("x", 16384) // net/http allows 4 KiB over the limit
	for name, c := range protocolClients(t, ts) {
		t.Run(name, func(t *testing.T) {
			if resp, _ := get(t, c, "GET", ts.URL(), "X-Small", "ok"); resp.StatusCode != 200 {
				t.Fatalf("small header: %d", resp.StatusCode)
			}
			req, err := http.NewRequest("GET", ts.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Big", big)
			resp, err := c.Do(req)
			if err != nil {
				if name != "h1" {
					t.Logf("client refused to send it: %v", err)
					return
				}
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("big header: %d, want 431", resp.StatusCode)
			}
		})
	}
}

// TestLimitsPerWorker: with several workers (one quic.Transport each) the
// server-wide QUIC limits are split between them, rounded up, and the
// HTTP/3 limits stay whole.
func TestLimitsPerWorker(t *testing.T) {
	l := DefaultLimits()
	if one := l.perWorker(1); one != l {
		t.Fatalf("one worker changed the limits: %+v", one)
	}
	w := l.perWorker(3)
	if w.MaxConnections != 1366 || w.MaxHandshakes != 86 || w.AcceptBacklog != 43 || w.RetryThreshold != 22 ||
		w.SendBuffer != (256<<20+2)/3 || w.ReceiveBuffer != (256<<20+2)/3 || w.UnvalidatedBudget != (8<<20+2)/3 ||
		w.PrefixRate != l.PrefixRate/3 || w.PrefixBurst != (l.PrefixBurst+2)/3 || w.MaxPrefixes != (l.MaxPrefixes+2)/3 {
		t.Errorf("per-worker QUIC limits: %+v", w)
	}
	if w.MaxHeaderBytes != l.MaxHeaderBytes || w.ConnHeaderBytes != l.ConnHeaderBytes || w.MaxStreams != l.MaxStreams ||
		w.WriteStallTimeout != l.WriteStallTimeout {
		t.Errorf("per-worker changed a per-connection or HTTP/3 limit: %+v", w)
	}
	l.MaxConnections, l.MaxHandshakes = 0, 0
	if w := l.perWorker(4); w.MaxConnections != 0 || w.MaxHandshakes != 0 {
		t.Errorf("no limit (0) became %d, %d", w.MaxConnections, w.MaxHandshakes)
	}
	if w := l.perWorker(1000); w.AcceptBacklog < 1 || w.RetryThreshold < 1 {
		t.Errorf("a share rounded down to nothing: %+v", w)
	}
}
