package http3

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// The tests here run the API that WebTransport and MASQUE libraries use
// (extended CONNECT, streams taken over, HTTP Datagrams, capsules,
// settings) between our implementation and quic-go's, in both roles: a
// CONNECT-UDP-like exchange (RFC 9298's shape) where the server echoes
// datagrams and answers a capsule.

// dgStream is what both implementations' Stream and RequestStream have.
type dgStream interface {
	io.ReadWriteCloser
	SendDatagram([]byte) error
	ReceiveDatagram(context.Context) ([]byte, error)
}

// reqStream is a client request stream of either implementation.
type reqStream interface {
	dgStream
	SendRequestHeader(*http.Request) error
	ReadResponse() (*http.Response, error)
}

// capsuleCodec writes and reads one capsule with one implementation's
// capsule API. A parser per capsule is fine: neither reads ahead.
type capsuleCodec struct {
	write func(w io.Writer, typ uint64, v []byte) error
	read  func(r io.Reader) (typ uint64, v []byte, err error)
}

var ourCapsules = capsuleCodec{
	write: func(w io.Writer, typ uint64, v []byte) error { return WriteCapsule(w, CapsuleType(typ), v) },
	read: func(r io.Reader) (uint64, []byte, error) {
		typ, cr, err := NewCapsuleParser(r).Next()
		if err != nil {
			return 0, nil, err
		}
		v, err := io.ReadAll(cr)
		return uint64(typ), v, err
	},
}

var quicGoCapsules = capsuleCodec{
	write: func(w io.Writer, typ uint64, v []byte) error {
		return quicgohttp3.WriteCapsule(quicvarint.NewWriter(w), quicgohttp3.CapsuleType(typ), v)
	},
	read: func(r io.Reader) (uint64, []byte, error) {
		typ, cr, err := quicgohttp3.NewCapsuleParser(r).Next()
		if err != nil {
			return 0, nil, err
		}
		v, err := io.ReadAll(cr)
		return uint64(typ), v, err
	},
}

const (
	capsulePing    = 0x2a // test capsule types (unregistered: any type is allowed)
	capsulePong    = 0x2b
	masqueUDPPath  = "/.well-known/masque/udp/192.0.2.6/443/"
	connectUDPName = "connect-udp"
)

// udpProxyHandler is the server side of the exchange, written against
// either implementation through the three functions: it checks the
// extended CONNECT and the client's SETTINGS, takes the stream over,
// echoes datagrams until the stream's receive side ends (reporting how
// it ended on done), and answers a ping capsule with a pong.
func udpProxyHandler(t *testing.T, caps capsuleCodec, settings func(http.ResponseWriter) (received <-chan struct{}, datagrams func() bool),
	take func(http.ResponseWriter) (dgStream, error), done chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Proto != connectUDPName || r.URL.Path != masqueUDPPath ||
			r.Header.Get(CapsuleProtocolHeader) != "?1" {
			t.Errorf("request %s %s %s %v", r.Method, r.Proto, r.URL.Path, r.Header)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		received, datagrams := settings(w)
		select {
		case <-received:
		case <-r.Context().Done():
			return
		}
		if !datagrams() {
			t.Error("the client's SETTINGS do not enable HTTP datagrams")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set(CapsuleProtocolHeader, "?1")
		w.WriteHeader(http.StatusOK)
		str, err := take(w)
		if err != nil {
			t.Errorf("HTTPStream: %v", err)
			return
		}
		go func() {
			for {
				d, err := str.ReceiveDatagram(context.Background())
				if err != nil {
					done <- err
					return
				}
				if err := str.SendDatagram(append([]byte("echo:"), d...)); err != nil {
					done <- err
					return
				}
			}
		}()
		// The handler returns while a goroutine owns the stream, as a
		// proxy would.
		go func() {
			defer str.Close()
			for {
				typ, v, err := caps.read(str)
				if err == io.EOF {
					return // the client closed its side
				}
				if err != nil {
					t.Errorf("server reading a capsule: %v", err)
					return
				}
				if typ != capsulePing {
					t.Errorf("capsule type %#x", typ)
				}
				rev := bytes.Clone(v)
				for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
					rev[i], rev[j] = rev[j], rev[i]
				}
				if err := caps.write(str, capsulePong, rev); err != nil {
					t.Errorf("server writing a capsule: %v", err)
					return
				}
			}
		}()
	})
}

// runUDPProxyClient is the client side: extended CONNECT on a request
// stream, ten datagrams echoed (each sent again if its echo does not
// come, datagrams being unreliable), a capsule answered, then the
// stream closed from our side and read to its end.
func runUDPProxyClient(t *testing.T, caps capsuleCodec, str reqStream, authority string) {
	t.Helper()
	u := &url.URL{Scheme: "https", Host: authority, Path: masqueUDPPath}
	req := &http.Request{Method: http.MethodConnect, Proto: connectUDPName, Host: authority, URL: u,
		Header: http.Header{CapsuleProtocolHeader: {"?1"}}}
	if err := str.SendRequestHeader(req); err != nil {
		t.Fatal(err)
	}
	rsp, err := str.ReadResponse()
	if err != nil {
		t.Fatal(err)
	}
	if rsp.StatusCode != http.StatusOK || rsp.Header.Get(CapsuleProtocolHeader) != "?1" {
		t.Fatalf("response %d %v", rsp.StatusCode, rsp.Header)
	}
	for i := range 10 {
		want := fmt.Sprintf("echo:datagram %d", i)
		for try := 0; ; try++ {
			if try == 20 {
				t.Fatalf("datagram %d: no echo after %d tries", i, try)
			}
			if err := str.SendDatagram(fmt.Appendf(nil, "datagram %d", i)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			d, err := str.ReceiveDatagram(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				continue // lost: send it again
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(d) == want {
				break
			}
			// A late echo of an earlier copy: wait for this one.
		}
	}
	if err := caps.write(str, capsulePing, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	typ, v, err := caps.read(str)
	if err != nil || typ != capsulePong || string(v) != "gnip" {
		t.Fatalf("answer capsule %#x %q %v", typ, v, err)
	}
	if err := str.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := caps.read(str); err != io.EOF {
		t.Fatalf("after our close, the server's side ended with %v, want io.EOF", err)
	}
	if err := str.SendDatagram([]byte("late")); err == nil {
		t.Fatal("SendDatagram after Close succeeded")
	}
}

// ourDatagramServer runs our Server with HTTP datagrams and h.
func ourDatagramServer(t *testing.T, h http.Handler) (string, *tls.Config) {
	_, addr, clientTLS := startServer(t, h, func(s *Server) { s.EnableDatagrams = true })
	return addr, clientTLS
}

func quicGoDatagramServer(t *testing.T, h http.Handler) (string, *tls.Config) {
	return startQuicGoServerWith(t, h, func(s *quicgohttp3.Server) { s.EnableDatagrams = true })
}

// dialOurClientConn dials with our QUIC package (datagrams on) and runs
// our ClientConn on the connection.
func dialOurClientConn(t *testing.T, addr string, clientTLS *tls.Config, tr *Transport) *ClientConn {
	t.Helper()
	qc, err := quic.DialAddr(context.Background(), addr, clientTLS, &quic.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	return tr.NewClientConn(qc)
}

func dialQuicGoClientConn(t *testing.T, addr string, clientTLS *tls.Config, tr *quicgohttp3.Transport) *quicgohttp3.ClientConn {
	t.Helper()
	qc, err := quicgo.DialAddr(context.Background(), addr, clientTLS, &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	return tr.NewClientConn(qc)
}

func TestExtendedConnectDatagramsCapsules(t *testing.T) {
	checkGoroutines(t)
	ourHandler := func(t *testing.T, done chan error) http.Handler {
		return udpProxyHandler(t, ourCapsules,
			func(w http.ResponseWriter) (<-chan struct{}, func() bool) {
				s := w.(Settingser)
				return s.ReceivedSettings(), func() bool { return s.Settings().EnableDatagrams }
			},
			func(w http.ResponseWriter) (dgStream, error) { return w.(HTTPStreamer).HTTPStream() }, done)
	}
	quicGoHandler := func(t *testing.T, done chan error) http.Handler {
		return udpProxyHandler(t, quicGoCapsules,
			func(w http.ResponseWriter) (<-chan struct{}, func() bool) {
				s := w.(quicgohttp3.Settingser)
				return s.ReceivedSettings(), func() bool { return s.Settings().EnableDatagrams }
			},
			func(w http.ResponseWriter) (dgStream, error) { return w.(quicgohttp3.HTTPStreamer).HTTPStream() }, done)
	}
	for _, tc := range []struct {
		name    string
		ours    bool // our server; else quic-go's
		oursCli bool
	}{
		{"ours-ours", true, true},
		{"ours-quicgo", true, false},
		{"quicgo-ours", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			var addr string
			var clientTLS *tls.Config
			if tc.ours {
				addr, clientTLS = ourDatagramServer(t, ourHandler(t, done))
			} else {
				addr, clientTLS = quicGoDatagramServer(t, quicGoHandler(t, done))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			authority := "localhost:" + addr[len("127.0.0.1:"):]
			if tc.oursCli {
				cc := dialOurClientConn(t, addr, clientTLS, &Transport{EnableDatagrams: true})
				<-cc.ReceivedSettings()
				if s := cc.Settings(); !s.EnableDatagrams || !s.EnableExtendedConnect {
					t.Fatalf("server settings %+v", s)
				}
				str, err := cc.OpenRequestStream(ctx)
				if err != nil {
					t.Fatal(err)
				}
				runUDPProxyClient(t, ourCapsules, str, authority)
			} else {
				cc := dialQuicGoClientConn(t, addr, clientTLS, &quicgohttp3.Transport{EnableDatagrams: true})
				<-cc.ReceivedSettings()
				if s := cc.Settings(); !s.EnableDatagrams || !s.EnableExtendedConnect || len(s.Other) != 0 {
					t.Fatalf("our server's settings as quic-go sees them: %+v", s)
				}
				str, err := cc.OpenRequestStream(ctx)
				if err != nil {
					t.Fatal(err)
				}
				runUDPProxyClient(t, quicGoCapsules, str, authority)
			}
			select {
			case err := <-done:
				if !errors.Is(err, io.EOF) {
					t.Fatalf("the server's datagram loop ended with %v, want io.EOF (the client closed its side)", err)
				}
			case <-ctx.Done():
				t.Fatal("the server's datagram loop did not end")
			}
		})
	}
}

// startQuicGoServerWith is startQuicGoServer with the server changed by
// opts, its QUIC datagrams following EnableDatagrams.
func startQuicGoServerWith(t testing.TB, h http.Handler, opts ...func(*quicgohttp3.Server)) (string, *tls.Config) {
	t.Helper()
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &quicgohttp3.Server{Handler: h, TLSConfig: quicgohttp3.ConfigureTLSConfig(serverTLS)}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(func() { pc.Close() }) // after the server's Cleanup below
	testutil.Serve(t, func() { s.Serve(pc) }, func() { s.Close() })
	return pc.LocalAddr().String(), clientTLS
}

// TestExtendedConnectRoundTrip: an extended CONNECT through
// http.RoundTripper (as a WebSocket-over-HTTP/3 client would send it):
// the request body and the 2xx response body are the two directions of
// the tunnel, with our client and quic-go's, our server and quic-go's.
func TestExtendedConnectRoundTrip(t *testing.T) {
	checkGoroutines(t)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Proto != "websocket" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		buf := make([]byte, 1024)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	})
	for _, tc := range []struct {
		name           string
		ourSrv, ourCli bool
	}{{"ours-ours", true, true}, {"ours-quicgo", true, false}, {"quicgo-ours", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			sp := serverPeers[0]
			if !tc.ourSrv {
				sp = serverPeers[1]
			}
			addr, clientTLS := sp.start(t, echo, nil, nil)
			var rt http.RoundTripper
			if tc.ourCli {
				tr := &Transport{TLSClientConfig: clientTLS}
				defer tr.Close()
				rt = tr
			} else {
				tr := &quicgohttp3.Transport{TLSClientConfig: clientTLS}
				defer tr.Close()
				rt = tr
			}
			pr, pw := io.Pipe()
			u, _ := url.Parse(localhostURL(t, addr, "/chat"))
			rsp, err := rt.RoundTrip(&http.Request{Method: http.MethodConnect, Proto: "websocket", URL: u, Host: u.Host,
				Header: http.Header{}, Body: pr})
			if err != nil {
				t.Fatal(err)
			}
			defer rsp.Body.Close()
			if rsp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", rsp.StatusCode)
			}
			for _, msg := range []string{"hello", "tunnel"} {
				if _, err := io.WriteString(pw, msg); err != nil {
					t.Fatal(err)
				}
				b := make([]byte, len(msg))
				if _, err := io.ReadFull(rsp.Body, b); err != nil || string(b) != msg {
					t.Fatalf("echo %q %v", b, err)
				}
			}
			pw.Close()
			if rest, err := io.ReadAll(rsp.Body); err != nil || len(rest) != 0 {
				t.Fatalf("after our side closed: %q %v", rest, err)
			}
		})
	}
}
