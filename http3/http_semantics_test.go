package http3

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The tests here are the HTTP semantics of issue 15, after quic-go's
// integration tests of the same names, each run with the pairs of peers
// below: our server with our client and with quic-go's, and quic-go's
// server with our client.

type peerPair struct {
	name   string
	server func(t *testing.T, h http.Handler) (addr string, clientTLS *tls.Config)
	client func(t *testing.T, clientTLS *tls.Config) *http.Client
}

func ourServer(t *testing.T, h http.Handler) (string, *tls.Config) {
	_, addr, clientTLS := startServer(t, h)
	return addr, clientTLS
}

func quicGoServer(t *testing.T, h http.Handler) (string, *tls.Config) {
	return startQuicGoServer(t, h)
}

var peerPairs = []peerPair{
	{"ours-ours", ourServer, clientKinds[0].make},
	{"ours-quicgo", ourServer, clientKinds[1].make},
	{"quicgo-ours", quicGoServer, clientKinds[0].make},
}

// localhostURL turns a loopback address into an https URL for
// localhost, the name the test certificate is for.
func localhostURL(t *testing.T, addr, path string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return "https://localhost:" + port + path
}

func TestHTTP1xxResponse(t *testing.T) {
	const link1, link2, data = "</style.css>; rel=preload; as=style", "</script.js>; rel=preload; as=script", "1xx-test-data"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Link", link1)
		w.Header().Add("Link", link2)
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, data)
	})
	for _, p := range peerPairs {
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			var got []int
			var hdr textproto.MIMEHeader
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
					got, hdr = append(got, code), h
					return nil
				},
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
			rsp, err := p.client(t, clientTLS).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer rsp.Body.Close()
			body, err := io.ReadAll(rsp.Body)
			if err != nil || rsp.StatusCode != 200 || string(body) != data {
				t.Fatalf("status %d body %q, %v", rsp.StatusCode, body, err)
			}
			if !slices.Equal(got, []int{http.StatusEarlyHints}) || !slices.Equal(hdr.Values("Link"), []string{link1, link2}) {
				t.Fatalf("Got1xxResponse %v with Link %q, want one 103 with both links", got, hdr.Values("Link"))
			}
			if !slices.Equal(rsp.Header.Values("Link"), []string{link1, link2}) {
				t.Fatalf("final Link %q", rsp.Header.Values("Link"))
			}
		})
	}
}

// TestHTTP1xxTerminalResponse: a 101 is the final response (net/http and
// quic-go semantics), not an interim one and not an error.
func TestHTTP1xxTerminalResponse(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("foo", "bar")
		w.WriteHeader(http.StatusSwitchingProtocols)
	})
	for _, p := range peerPairs {
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			interim := 0
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				Got1xxResponse: func(int, textproto.MIMEHeader) error { interim++; return nil },
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
			rsp, err := p.client(t, clientTLS).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			rsp.Body.Close()
			if rsp.StatusCode != http.StatusSwitchingProtocols || rsp.Header.Get("Foo") != "bar" || interim != 0 {
				t.Fatalf("status %d, Foo %q, %d interim responses", rsp.StatusCode, rsp.Header.Get("Foo"), interim)
			}
		})
	}
}

// TestTooManyInterimResponses: our client gives up after five interim
// responses, as net/http does, instead of reading them forever.
func TestTooManyInterimResponses(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 6 {
			w.WriteHeader(http.StatusEarlyHints)
		}
	})
	addr, clientTLS := ourServer(t, h)
	if _, err := clientKinds[0].make(t, clientTLS).Get("https://" + addr + "/"); err == nil || !strings.Contains(err.Error(), "too many 1xx") {
		t.Fatalf("six 103 responses: %v", err)
	}
}

func TestHTTPClientTrace(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusContinue) })
	for _, p := range peerPairs {
		if p.name == "ours-quicgo" {
			continue // quic-go's client: nothing of ours to check
		}
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			url := localhostURL(t, addr, "/")
			var mu sync.Mutex
			var events []string
			add := func(format string, args ...any) {
				mu.Lock()
				events = append(events, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			var gotConn httptrace.GotConnInfo
			trace := &httptrace.ClientTrace{
				GetConn:              func(hostPort string) { add("GetConn %s", hostPort) },
				DNSStart:             func(i httptrace.DNSStartInfo) { add("DNSStart %s", i.Host) },
				DNSDone:              func(i httptrace.DNSDoneInfo) { add("DNSDone %v", i.Err) },
				ConnectStart:         func(network, addr string) { add("ConnectStart %s %s", network, addr) },
				ConnectDone:          func(network, addr string, err error) { add("ConnectDone %s %s %v", network, addr, err) },
				TLSHandshakeStart:    func() { add("TLSHandshakeStart") },
				TLSHandshakeDone:     func(s tls.ConnectionState, err error) { add("TLSHandshakeDone %d %v", len(s.PeerCertificates), err) },
				GotConn:              func(i httptrace.GotConnInfo) { gotConn = i; add("GotConn %v", i.Reused) },
				WroteHeaderField:     func(k string, v []string) { add("WroteHeaderField %s %s", k, v) },
				WroteHeaders:         func() { add("WroteHeaders") },
				WroteRequest:         func(i httptrace.WroteRequestInfo) { add("WroteRequest %v", i.Err) },
				GotFirstResponseByte: func() { add("GotFirstResponseByte") },
				Got1xxResponse:       func(code int, _ textproto.MIMEHeader) error { add("Got1xxResponse %d", code); return nil },
				Got100Continue:       func() { add("Got100Continue") },
			}
			c := p.client(t, clientTLS)
			for i := range 2 {
				events = nil
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
				rsp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				rsp.Body.Close()
				if rsp.StatusCode != 200 {
					t.Fatalf("status %d", rsp.StatusCode)
				}
				ip := "127.0.0.1:" + url[len("https://localhost:"):len(url)-1]
				want := []string{"GetConn localhost" + url[len("https://localhost"):len(url)-1],
					"DNSStart localhost", "DNSDone <nil>", "ConnectStart udp " + ip, "TLSHandshakeStart",
					"TLSHandshakeDone 1 <nil>", "ConnectDone udp " + ip + " <nil>", "GotConn false"}
				if i == 1 { // the connection is reused: no dial
					want = []string{want[0], "GotConn true"}
				}
				want = append(want, "WroteHeaderField :authority [localhost"+url[len("https://localhost"):len(url)-1]+"]",
					"WroteHeaderField :method [GET]", "WroteHeaderField :path [/]", "WroteHeaderField :scheme [https]",
					"WroteHeaderField accept-encoding [gzip]", // Transport.DisableCompression is false
					"WroteHeaders", "WroteRequest <nil>", "GotFirstResponseByte", "Got1xxResponse 100", "Got100Continue")
				mu.Lock()
				got := slices.Clone(events)
				mu.Unlock()
				if !slices.Equal(got, want) {
					t.Fatalf("request %d: events\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			if gotConn.Conn.RemoteAddr().String() != "127.0.0.1"+url[len("https://localhost"):len(url)-1] {
				t.Fatalf("GotConn remote address %v", gotConn.Conn.RemoteAddr())
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("GotConnInfo.Conn.Read did not panic")
					}
				}()
				gotConn.Conn.Read(nil)
			}()
		})
	}
}

// TestHTTPResponseTrailers: announced trailers are in Response.Trailer
// (nil values) and not in the header; header fields set after
// WriteHeader are not sent; after the body, Trailer holds exactly the
// trailers that arrived.
func TestHTTPResponseTrailers(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "AtEnd1, AtEnd2")
		w.Header().Add("Trailer", "Never")
		w.Header().Add("Trailer", "LAST")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.Header().Set("AtEnd1", "value 1")
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		w.Header().Set("AtEnd2", "value 2")
		io.WriteString(w, "second\n")
		w.Header().Set("LAST", "value 3")
		w.Header().Set(http.TrailerPrefix+"Unannounced", "Surprise!")
		w.Header().Set("Late-Header", "No surprise!")
	})
	for _, p := range peerPairs {
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			rsp, err := p.client(t, clientTLS).Get("https://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer rsp.Body.Close()
			for _, k := range []string{"Trailer", "Atend1", "Atend2", "Never", "Last", "Late-Header"} {
				if _, ok := rsp.Header[k]; ok {
					t.Errorf("header has %s: %v", k, rsp.Header)
				}
			}
			announced := http.Header{"Atend1": nil, "Atend2": nil, "Never": nil, "Last": nil}
			if !reflect.DeepEqual(rsp.Trailer, announced) {
				t.Fatalf("Trailer before the body %v, want %v", rsp.Trailer, announced)
			}
			body, err := io.ReadAll(rsp.Body)
			if err != nil || string(body) != "first\nsecond\n" {
				t.Fatalf("body %q, %v", body, err)
			}
			want := http.Header{"Atend1": {"value 1"}, "Atend2": {"value 2"}, "Last": {"value 3"}, "Unannounced": {"Surprise!"}}
			if !reflect.DeepEqual(rsp.Trailer, want) {
				t.Fatalf("Trailer after the body %v, want %v", rsp.Trailer, want)
			}
		})
	}
}

// TestHTTPResponseContentLength compares the Content-Length of HTTP/3
// responses with net/http's HTTP/2 for the same handler, as quic-go's
// test of the same name does.
func TestHTTPResponseContentLength(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		handler http.HandlerFunc
	}{
		{"with Content-Length", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "6")
			io.WriteString(w, "foobar")
		}},
		{"without Content-Length", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "foobar") }},
		{"flushed", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "foo")
			w.(http.Flusher).Flush()
			io.WriteString(w, "bar")
		}},
		{"HEAD", http.MethodHead, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "foobar") }},
		{"HEAD with Content-Length", http.MethodHead, func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("Content-Length", "6") }},
		{"204", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		{"empty after 103", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusEarlyHints) }},
		{"shorter than Content-Length", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "6")
			io.WriteString(w, "foo")
		}},
		{"longer than Content-Length", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "3")
			w.(http.Flusher).Flush()
			io.WriteString(w, "foobar")
		}},
	}
	do := func(t *testing.T, c *http.Client, method, url string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(method, url, nil)
		rsp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		body, err := io.ReadAll(rsp.Body)
		return rsp, body, err
	}
	for _, tc := range cases {
		h2 := httptest.NewUnstartedServer(tc.handler)
		h2.EnableHTTP2 = true
		h2.StartTLS()
		h2Rsp, h2Body, h2Err := do(t, h2.Client(), tc.method, h2.URL)
		h2.Close()
		for _, p := range peerPairs {
			if p.name == "quicgo-ours" && (strings.HasPrefix(tc.name, "shorter") || strings.HasPrefix(tc.name, "longer")) {
				// quic-go's server resets such a stream right after
				// writing the header, which then arrives only if its send
				// loop was faster than the reset: a race of quic-go's, not
				// a check of ours.
				continue
			}
			t.Run(tc.name+"/"+p.name, func(t *testing.T) {
				addr, clientTLS := p.server(t, tc.handler)
				rsp, body, err := do(t, p.client(t, clientTLS), tc.method, "https://"+addr+"/")
				if rsp.StatusCode != h2Rsp.StatusCode || !slices.Equal(rsp.Header["Content-Length"], h2Rsp.Header["Content-Length"]) ||
					rsp.ContentLength != h2Rsp.ContentLength || (err != nil) != (h2Err != nil) {
					t.Errorf("HTTP/3: %d %q %d %v; HTTP/2: %d %q %d %v", rsp.StatusCode, rsp.Header["Content-Length"], rsp.ContentLength, err,
						h2Rsp.StatusCode, h2Rsp.Header["Content-Length"], h2Rsp.ContentLength, h2Err)
				}
				if string(body) != string(h2Body) {
					t.Errorf("HTTP/3 body %q, HTTP/2 %q", body, h2Body)
				}
			})
		}
	}
}

// TestHTTPDifferentOrigins: requests to two origins on one address come
// from the same client address (one UDP socket per Transport, as in
// quic-go); with our client they share one connection, since the
// certificate is valid for both names (RFC 9114 3.3).
func TestHTTPDifferentOrigins(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-RemoteAddr", r.RemoteAddr) })
	for _, p := range peerPairs {
		if p.name == "ours-quicgo" {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			c := p.client(t, clientTLS)
			var seen []string
			var reused []bool
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
			})
			for _, url := range []string{localhostURL(t, addr, "/"), "https://" + addr + "/"} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				rsp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				rsp.Body.Close()
				seen = append(seen, rsp.Header.Get("X-RemoteAddr"))
			}
			if seen[0] == "" || seen[0] != seen[1] {
				t.Fatalf("client addresses %q, want one", seen)
			}
			if !slices.Equal(reused, []bool{false, true}) {
				t.Fatalf("GotConn Reused %v, want the second origin on the first connection", reused)
			}
		})
	}
}

// TestMisdirectedRequestRetried: a server that answers 421 to a request
// that came on another origin's connection gets it again on a connection
// of its own; an origin whose name the certificate does not cover never
// shares one.
func TestMisdirectedRequestRetried(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	misdirected := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.Host, "127.0.0.1") && misdirected == 0 {
			misdirected++
			w.WriteHeader(http.StatusMisdirectedRequest)
			return
		}
		io.WriteString(w, r.Host)
	})
	s, addr, clientTLS := startServer(t, h)
	c := clientKinds[0].make(t, clientTLS)
	for _, url := range []string{localhostURL(t, addr, "/"), "https://" + addr + "/"} {
		rsp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		if rsp.StatusCode != 200 || url != "https://"+string(b)+"/" {
			t.Fatalf("%s: %d %q", url, rsp.StatusCode, b)
		}
	}
	if misdirected != 1 || s.Stats().ConnsAccepted != 2 {
		t.Fatalf("%d 421 answers, %d connections; want the retry on a second connection", misdirected, s.Stats().ConnsAccepted)
	}

	// A name outside the certificate (it has localhost and 127.0.0.1)
	// is not served on the existing connection, even at the same address.
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	if _, _, err := tr.getConn(context.Background(), addr, false, true); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ua, _ := net.ResolveUDPAddr("udp", addr)
	if cc := tr.coalesceLocked("example.com:443", ua); cc != nil {
		t.Fatal("a connection was shared with an origin its certificate does not cover")
	}
	if cc := tr.coalesceLocked("127.0.0.1:443", &net.UDPAddr{IP: ua.IP, Port: ua.Port + 1}); cc != nil {
		t.Fatal("a connection was shared with another port")
	}
}
