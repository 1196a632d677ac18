package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// gateRelay relays UDP datagrams between one client and the front. The
// front's datagrams wait while the gate is closed: the client cannot
// finish its handshake, so what it sent in 0-RTT reaches the front as
// early data, whatever the machine's timing.
type gateRelay struct {
	pc, up *net.UDPConn
	mu     sync.Mutex
	client *net.UDPAddr
	open   bool
	held   [][]byte
	done   chan struct{}
}

func startGateRelay(t *testing.T, front net.Addr) *gateRelay {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.DialUDP("udp", nil, front.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	g := &gateRelay{pc: pc, up: up, open: true, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // client to front
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			g.mu.Lock()
			g.client = from
			g.mu.Unlock()
			_, _ = up.Write(buf[:n])
		}
	}()
	go func() { // front to client, held while the gate is closed
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			g.mu.Lock()
			if g.open && g.client != nil {
				_, _ = pc.WriteToUDP(buf[:n], g.client)
			} else {
				g.held = append(g.held, append([]byte(nil), buf[:n]...))
			}
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		up.Close()
		wg.Wait()
	})
	return g
}

func (g *gateRelay) setOpen(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
	if open {
		for _, p := range g.held {
			_, _ = g.pc.WriteToUDP(p, g.client)
		}
		g.held = nil
	}
}

func (g *gateRelay) addr() string { return g.pc.LocalAddr().String() }

// ticketCache signals each session ticket stored.
type ticketCache struct {
	tls.ClientSessionCache
	put chan struct{}
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case c.put <- struct{}{}:
		default:
		}
	}
}

// earlyUpstream answers with what the proxy forwarded: the method, the
// Early-Data field and the body; "/too-early" answers 425 to requests
// marked early, as an upstream that does not take replayable requests.
func earlyUpstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/too-early" && r.Header.Get("Early-Data") == "1" {
			w.WriteHeader(http.StatusTooEarly)
			return
		}
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" early="+r.Header.Get("Early-Data")+" body="+string(b))
	})
}

// TestEarlyData (RFC 8470): through the front, a GET sent in 0-RTT
// reaches the upstream with Early-Data: 1; a POST sent in 0-RTT is
// answered 425 without reaching the upstream, or, with EarlyDataHold,
// is forwarded once the handshake completed, without Early-Data; an
// upstream's 425 reaches the client. The requests are sent in 0-RTT on
// a resumed session while a relay holds the front's packets, so the
// front sees each request before the handshake completes.
func TestEarlyData(t *testing.T) {
	checkNoLeak(t)
	for _, tc := range []struct {
		name     string
		policy   EarlyDataPolicy
		method   string
		path     string
		wantCode int
		wantBody string
		outcome  string
	}{
		{"GET", EarlyDataReject, http.MethodGet, "/", http.StatusOK, "GET early=1 body=", earlyForwarded},
		{"POST rejected", EarlyDataReject, http.MethodPost, "/", http.StatusTooEarly, "", earlyRejected},
		{"POST held", EarlyDataHold, http.MethodPost, "/", http.StatusOK, "POST early= body=payload", earlyHeld},
		{"upstream 425", EarlyDataReject, http.MethodGet, "/too-early", http.StatusTooEarly, "", earlyForwarded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, earlyUpstream())
			arrived := make(chan bool, 4) // HandshakeComplete of each request the front got
			f := startFront(t, Config{Upstreams: []string{up}, EarlyData: tc.policy}, func(fc *fileserver.Config) {
				next := fc.Handler
				fc.Handler = func(s fileserver.Site) (http.Handler, error) {
					h, err := next(s)
					if err != nil {
						return nil, err
					}
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						arrived <- r.TLS.HandshakeComplete
						h.ServeHTTP(w, r)
					}), nil
				}
			})
			relay := startGateRelay(t, f.HTTP3Addr())
			cache := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), put: make(chan struct{}, 1)}
			tlsConf := &tls.Config{RootCAs: f.pool, ServerName: "127.0.0.1", NextProtos: []string{http3.NextProtoH3}, ClientSessionCache: cache}
			tr := &http3.Transport{}
			defer tr.Close()
			dial := func() (*quic.Conn, *http3.ClientConn) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), clientHandshakeTimeout)
				defer cancel()
				qc, err := quic.DialAddrEarly(ctx, relay.addr(), tlsConf, &quic.Config{HandshakeIdleTimeout: clientHandshakeTimeout})
				if err != nil {
					t.Fatal(err)
				}
				return qc, tr.NewClientConn(qc)
			}
			url := "https://" + relay.addr() + tc.path

			// A full handshake, for a session ticket that allows 0-RTT.
			qc, cc := dial()
			req, _ := http.NewRequest(http.MethodGet, "https://"+relay.addr()+"/", nil)
			rsp, err := cc.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, rsp.Body)
			rsp.Body.Close()
			<-arrived
			select {
			case <-cache.put:
			case <-time.After(10 * time.Second): // a hang guard
				t.Fatal("no session ticket")
			}
			qc.CloseWithError(0, "")

			relay.setOpen(false)
			qc, cc = dial()
			defer qc.CloseWithError(0, "")
			type result struct {
				code int
				body string
				err  error
			}
			res := make(chan result, 1)
			go func() {
				var r result
				var rsp *http.Response
				if tc.method == http.MethodGet {
					req, _ := http.NewRequest(tc.method, url, nil)
					rsp, r.err = cc.RoundTrip(req)
				} else {
					// The RequestStream API sends at once, in 0-RTT;
					// RoundTrip would wait for the handshake.
					rsp, r.err = sendEarly(cc, tc.method, url, "payload")
				}
				if r.err == nil {
					b, err := io.ReadAll(rsp.Body)
					rsp.Body.Close()
					r.code, r.body, r.err = rsp.StatusCode, string(b), err
				}
				res <- r
			}()
			if complete := <-arrived; complete {
				t.Fatal("the request reached the front after the handshake: not in 0-RTT")
			}
			relay.setOpen(true)
			r := <-res
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.code != tc.wantCode || (tc.wantBody != "" && r.body != tc.wantBody) {
				t.Errorf("got %d %q, want %d %q", r.code, r.body, tc.wantCode, tc.wantBody)
			}
			if got := f.metric(t, "turboretry_proxy_early_data_total", map[string]string{"outcome": tc.outcome}); got != 1 {
				t.Errorf("early data %s: %v, want 1", tc.outcome, got)
			}
			if tc.outcome == earlyRejected {
				if got := f.metric(t, "turboretry_proxy_upstream_requests_total", map[string]string{"code": "200"}); got != 1 {
					t.Errorf("the upstream answered %v requests, want only the first", got)
				}
			}
			// Closed while the relay still forwards, so the front need
			// not wait for the connection at shutdown.
			qc.CloseWithError(0, "")
			eventually(t, "the front to see the connection closed", func() bool {
				return f.metric(t, "turboretry_quic_connections_active", nil) == 0
			})
		})
	}
}

// sendEarly sends a request with body on a new stream of cc without
// waiting for the handshake.
func sendEarly(cc *http3.ClientConn, method, url, body string) (*http.Response, error) {
	rs, err := cc.OpenRequestStream(context.Background())
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(method, url, nil)
	req.ContentLength = int64(len(body))
	if err := rs.SendRequestHeader(req); err != nil {
		return nil, err
	}
	// The front may answer (425) before the body is out and stop it
	// with H3_NO_ERROR (RFC 9114 section 4.1): the response counts.
	_, werr := io.Copy(rs, strings.NewReader(body))
	if werr == nil {
		werr = rs.Close()
	}
	rsp, err := rs.ReadResponse()
	if err != nil {
		return nil, errors.Join(werr, err)
	}
	return rsp, nil
}
