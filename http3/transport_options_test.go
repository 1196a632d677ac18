package http3

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/quic"
)

// gzipHandler gzips its body when the request accepts gzip, and reports
// the Accept-Encoding it got.
func gzipHandler(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Accept-Encoding", r.Header.Get("Accept-Encoding"))
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, body)
		zw.Close()
	})
}

// TestTransportCompression: by default the Transport asks for gzip and
// decodes the answer, as quic-go and net/http do; DisableCompression, an
// Accept-Encoding of the application's own, Range, HEAD and CONNECT
// leave the body as the server sent it. Against our server and quic-go's.
func TestTransportCompression(t *testing.T) {
	checkGoroutines(t)
	body := strings.Repeat("compress me ", 100)
	for _, sp := range serverPeers {
		t.Run(sp.name, func(t *testing.T) {
			addr, clientTLS := sp.start(t, gzipHandler(body), nil, nil)
			url := localhostURL(t, addr, "/")
			get := func(tr *Transport, method string, hdr http.Header) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequest(method, url, nil)
				for k, v := range hdr {
					req.Header[k] = v
				}
				rsp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer rsp.Body.Close()
				b, err := io.ReadAll(rsp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return rsp, b
			}
			tr := &Transport{TLSClientConfig: clientTLS}
			defer tr.Close()
			rsp, b := get(tr, http.MethodGet, nil)
			if string(b) != body || !rsp.Uncompressed || rsp.ContentLength != -1 ||
				rsp.Header.Get("Content-Encoding") != "" || rsp.Header.Get("X-Accept-Encoding") != "gzip" {
				t.Fatalf("default: %d bytes, uncompressed %v, length %d, header %v", len(b), rsp.Uncompressed, rsp.ContentLength, rsp.Header)
			}
			rsp, b = get(tr, http.MethodGet, http.Header{"Accept-Encoding": {"gzip"}})
			if rsp.Uncompressed || rsp.Header.Get("Content-Encoding") != "gzip" || bytes.Equal(b, []byte(body)) {
				t.Fatalf("the application's own Accept-Encoding: uncompressed %v, header %v", rsp.Uncompressed, rsp.Header)
			}
			for _, tc := range []struct {
				name   string
				method string
				hdr    http.Header
			}{{"range", http.MethodGet, http.Header{"Range": {"bytes=0-"}}}, {"head", http.MethodHead, nil}} {
				rsp, _ = get(tr, tc.method, tc.hdr)
				if rsp.Header.Get("X-Accept-Encoding") != "" {
					t.Fatalf("%s: the Transport asked for gzip", tc.name)
				}
			}
			off := &Transport{TLSClientConfig: clientTLS, DisableCompression: true}
			defer off.Close()
			rsp, b = get(off, http.MethodGet, nil)
			if string(b) != body || rsp.Uncompressed || rsp.Header.Get("X-Accept-Encoding") != "" {
				t.Fatalf("DisableCompression: uncompressed %v, header %v", rsp.Uncompressed, rsp.Header)
			}
		})
	}
}

// TestGzipBodyErrors: a response that says gzip but is not fails the
// read, as in net/http.
func TestGzipBodyErrors(t *testing.T) {
	for _, in := range []string{"", "not gzip at all"} {
		g := &gzipBody{body: io.NopCloser(strings.NewReader(in))}
		if _, err := io.ReadAll(g); err == nil {
			t.Fatalf("%q decoded", in)
		}
		if _, err := g.Read(make([]byte, 1)); err == nil {
			t.Fatal("the error is not sticky")
		}
	}
}

// TestServerContextKeys: a handler finds its Server and the client's
// address in the request context, and ConnContext sees them, with
// quic-go's client and ours.
func TestServerContextKeys(t *testing.T) {
	checkGoroutines(t)
	type key struct{}
	type result struct {
		server, conn any
		remote       net.Addr
		ok           bool
	}
	got := make(chan result, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, ok := r.Context().Value(RemoteAddrContextKey).(net.Addr)
		got <- result{server: r.Context().Value(ServerContextKey), conn: r.Context().Value(key{}), remote: remote, ok: ok}
	})
	srv, addr, clientTLS := startServer(t, h, func(s *Server) {
		s.ConnContext = func(ctx context.Context, c *quic.Conn) context.Context {
			if ctx.Value(ServerContextKey) != s || ctx.Value(RemoteAddrContextKey) != c.RemoteAddr() {
				t.Error("ConnContext's context lacks the server or the remote address")
			}
			return context.WithValue(ctx, key{}, "from ConnContext")
		}
	})
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			rsp, err := ck.make(t, clientTLS).Get(localhostURL(t, addr, "/"))
			if err != nil {
				t.Fatal(err)
			}
			rsp.Body.Close()
			r := <-got
			if r.server != srv || r.conn != "from ConnContext" || !r.ok || r.remote.(*net.UDPAddr).IP.String() != "127.0.0.1" {
				t.Fatalf("context values %+v", r)
			}
		})
	}
	if ServerContextKey.String() == RemoteAddrContextKey.String() || !strings.Contains(ServerContextKey.String(), "http3") {
		t.Fatal("context key names")
	}
}
