package http3

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
	"github.com/turboretry/turboretry/quic"
)

// The tests here are quic-go's integration tests of ClientConn,
// RequestStream, HTTPStreamer and settings (TestHTTPSettings,
// TestHTTPStreamer, TestHTTPStreamErrors), run between our
// implementation and quic-go's in both roles.

// serverPeer starts a server of one implementation with h; ourOpts
// configure ours, quicGoOpts quic-go's.
type serverPeer struct {
	name  string
	start func(t *testing.T, h http.Handler, ourOpts func(*Server), quicGoOpts func(*quicgohttp3.Server)) (addr string, clientTLS *tls.Config)
}

var serverPeers = []serverPeer{
	{"ours", func(t *testing.T, h http.Handler, o func(*Server), _ func(*quicgohttp3.Server)) (string, *tls.Config) {
		_, addr, clientTLS := startServer(t, h, func(s *Server) {
			if o != nil {
				o(s)
			}
		})
		return addr, clientTLS
	}},
	{"quic-go", func(t *testing.T, h http.Handler, _ func(*Server), o func(*quicgohttp3.Server)) (string, *tls.Config) {
		return startQuicGoServerWith(t, h, func(s *quicgohttp3.Server) {
			if o != nil {
				o(s)
			}
		})
	}},
}

// TestClientConnSettings is quic-go's TestHTTPSettings in both roles:
// the server's settings as a ClientConn sees them, and the client's as a
// handler sees them through Settingser.
func TestClientConnSettings(t *testing.T) {
	checkGoroutines(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, sp := range serverPeers {
		t.Run("server settings/"+sp.name, func(t *testing.T) {
			addr, clientTLS := sp.start(t, ok,
				func(s *Server) { s.AdditionalSettings = map[uint64]uint64{1337: 42} },
				func(s *quicgohttp3.Server) { s.AdditionalSettings = map[uint64]uint64{1337: 42} })
			cc := dialOurClientConn(t, addr, clientTLS, &Transport{})
			<-cc.ReceivedSettings()
			s := cc.Settings()
			if !s.EnableExtendedConnect || s.EnableDatagrams || len(s.Other) != 1 || s.Other[1337] != 42 {
				t.Fatalf("server settings %+v", s)
			}
			if cc.Settings() != s {
				t.Fatal("Settings returned a different value the second time")
			}
		})
	}
	for _, sp := range serverPeers {
		t.Run("our client's settings/"+sp.name, func(t *testing.T) {
			got := make(chan *Settings, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch s := w.(type) {
				case Settingser:
					<-s.ReceivedSettings()
					got <- s.Settings()
				case quicgohttp3.Settingser:
					<-s.ReceivedSettings()
					qs := s.Settings()
					got <- &Settings{EnableDatagrams: qs.EnableDatagrams, EnableExtendedConnect: qs.EnableExtendedConnect, Other: qs.Other}
				}
			})
			addr, clientTLS := sp.start(t, h, nil, nil)
			tr := &Transport{TLSClientConfig: clientTLS, EnableDatagrams: true, AdditionalSettings: map[uint64]uint64{1337: 42}}
			defer tr.Close()
			rsp, err := (&http.Client{Transport: tr}).Get(localhostURL(t, addr, "/settings"))
			if err != nil {
				t.Fatal(err)
			}
			rsp.Body.Close()
			s := <-got
			if !s.EnableDatagrams || s.EnableExtendedConnect || s.Other[1337] != 42 {
				t.Fatalf("our client's settings at the %s server: %+v", sp.name, s)
			}
		})
	}
	t.Run("quic-go client's settings/ours", func(t *testing.T) {
		got := make(chan *Settings, 1)
		addr, clientTLS := serverPeers[0].start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s := w.(Settingser)
			<-s.ReceivedSettings()
			got <- s.Settings()
		}), nil, nil)
		tr := &quicgohttp3.Transport{TLSClientConfig: clientTLS, EnableDatagrams: true,
			AdditionalSettings: map[uint64]uint64{1337: 42}}
		defer tr.Close()
		rsp, err := (&http.Client{Transport: tr}).Get(localhostURL(t, addr, "/settings"))
		if err != nil {
			t.Fatal(err)
		}
		rsp.Body.Close()
		if s := <-got; !s.EnableDatagrams || s.EnableExtendedConnect || s.Other[1337] != 42 {
			t.Fatalf("quic-go client's settings: %+v", s)
		}
	})
}

func TestAdditionalSettingsRefused(t *testing.T) {
	for _, m := range []map[uint64]uint64{{0x06: 1}, {0x33: 1}, {0x08: 1}, {0x02: 0}, {0x01: 4096}, {0x07: 1}, {1 << 62: 0}, {9: 1 << 62}} {
		if _, err := encodeAdditionalSettings(m); err == nil {
			t.Fatalf("%v accepted", m)
		}
		s := &Server{AdditionalSettings: m}
		if _, err := s.NewRawServerConn(nil); err == nil {
			t.Fatalf("NewRawServerConn with %v", m)
		}
		tr := &Transport{AdditionalSettings: m}
		req, _ := http.NewRequest(http.MethodGet, "https://localhost:1/", nil)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Fatalf("RoundTrip with %v", m)
		}
	}
	if b, err := encodeAdditionalSettings(map[uint64]uint64{0x21: 0, 0x1337: 1 << 40}); err != nil || len(b) == 0 {
		t.Fatalf("a reserved identifier and an extension's: %q %v", b, err)
	}
}

// TestHTTPStreamer is quic-go's test of the same name, across
// implementations: the handler takes the stream over after its header,
// writes, and echoes what the client sends from a goroutine after it
// returned; the client uses a RequestStream of a ClientConn.
func TestHTTPStreamer(t *testing.T) {
	checkGoroutines(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16) // above the flow-control windows' first credit
	echo := func(s interface {
		io.ReadWriteCloser
	}) {
		s.Write([]byte("foobar"))
		go func() {
			defer s.Close()
			io.Copy(s, s)
		}()
	}
	ours := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		s, err := w.(HTTPStreamer).HTTPStream()
		if err != nil {
			t.Error(err)
			return
		}
		echo(s)
	})
	quicGos := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		s, err := w.(quicgohttp3.HTTPStreamer).HTTPStream()
		if err != nil {
			t.Error(err)
			return
		}
		echo(s)
	})
	run := func(t *testing.T, str reqStream, url string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if err := str.SendRequestHeader(req); err != nil {
			t.Fatal(err)
		}
		rsp, err := str.ReadResponse()
		if err != nil || rsp.StatusCode != 200 {
			t.Fatalf("response %v %v", rsp, err)
		}
		b := make([]byte, 6)
		if _, err := io.ReadFull(str, b); err != nil || string(b) != "foobar" {
			t.Fatalf("read %q %v", b, err)
		}
		go func() {
			str.Write(data)
			str.Close()
		}()
		got, err := io.ReadAll(str)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("echo: %d bytes, %v", len(got), err)
		}
	}
	for _, tc := range []struct {
		name     string
		ourSrv   bool
		ourCli   bool
		serverFn http.Handler
	}{{"ours-ours", true, true, ours}, {"ours-quicgo", true, false, ours}, {"quicgo-ours", false, true, quicGos}} {
		t.Run(tc.name, func(t *testing.T) {
			var addr string
			var clientTLS *tls.Config
			if tc.ourSrv {
				addr, clientTLS = serverPeers[0].start(t, tc.serverFn, nil, nil)
			} else {
				addr, clientTLS = serverPeers[1].start(t, tc.serverFn, nil, nil)
			}
			url := localhostURL(t, addr, "/httpstreamer")
			if tc.ourCli {
				str, err := dialOurClientConn(t, addr, clientTLS, &Transport{}).OpenRequestStream(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				run(t, str, url)
			} else {
				str, err := dialQuicGoClientConn(t, addr, clientTLS, &quicgohttp3.Transport{}).OpenRequestStream(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				run(t, str, url)
			}
		})
	}
}

// TestClientConnRoundTrip: a ClientConn from NewClientConn is an
// http.RoundTripper on its own (quic-go's http_request_parsing test uses
// it so), against quic-go's server and ours; the Transport's pool does
// not know the connection.
func TestClientConnRoundTrip(t *testing.T) {
	checkGoroutines(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Write(body)
	})
	for _, sp := range serverPeers {
		t.Run(sp.name, func(t *testing.T) {
			addr, clientTLS := sp.start(t, h, nil, nil)
			tr := &Transport{}
			cc := dialOurClientConn(t, addr, clientTLS, tr)
			c := &http.Client{Transport: cc}
			for i := range 3 {
				rsp, err := c.Post(localhostURL(t, addr, "/"), "text/plain", bytes.NewReader([]byte("body")))
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(rsp.Body)
				rsp.Body.Close()
				if err != nil || string(b) != "body" || rsp.Header.Get("X-Method") != "POST" {
					t.Fatalf("request %d: %q %v %v", i, b, err, rsp.Header)
				}
			}
			tr.CloseIdleConnections()
			tr.Close()
			if cc.Context().Err() != nil {
				t.Fatal("the Transport closed a connection of NewClientConn")
			}
			if _, err := tr.RoundTrip(mustRequest(t, localhostURL(t, addr, "/"))); !errors.Is(err, ErrTransportClosed) {
				t.Fatalf("RoundTrip after Close: %v", err)
			}
		})
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHTTPStreamErrors is quic-go's test of the same name, across
// implementations: after both sides reset their send side, or the client
// closes the connection, reads and writes on both streams fail with
// *Error carrying H3_EXCESSIVE_LOAD, Remote telling who caused it.
func TestHTTPStreamErrors(t *testing.T) {
	checkGoroutines(t)
	type serverStream interface {
		io.ReadWriter
		CancelWrite(quic.StreamErrorCode)
		StreamID() quic.StreamID
	}
	for _, pair := range []struct {
		name              string
		ourSrv, ourClient bool
	}{{"ours-ours", true, true}, {"ours-quicgo", true, false}, {"quicgo-ours", false, true}} {
		for _, errorType := range []string{"stream cancellation", "application close"} {
			t.Run(pair.name+"/"+errorType, func(t *testing.T) {
				streams := make(chan any, 1)
				var addr string
				var clientTLS *tls.Config
				if pair.ourSrv {
					addr, clientTLS = serverPeers[0].start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.WriteHeader(http.StatusOK)
						s, _ := w.(HTTPStreamer).HTTPStream()
						streams <- s
					}), nil, nil)
				} else {
					addr, clientTLS = serverPeers[1].start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.WriteHeader(http.StatusOK)
						s, _ := w.(quicgohttp3.HTTPStreamer).HTTPStream()
						streams <- s
					}), nil, nil)
				}
				var str reqStream
				var cancelWrite func(quic.StreamErrorCode)
				var closeConn func(quic.ApplicationErrorCode)
				if pair.ourClient {
					cc := dialOurClientConn(t, addr, clientTLS, &Transport{})
					rs, err := cc.OpenRequestStream(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					rs.SetDeadline(time.Now().Add(5 * time.Second))
					str, cancelWrite, closeConn = rs, rs.CancelWrite, func(c quic.ApplicationErrorCode) { cc.CloseWithError(c, "") }
				} else {
					cc := dialQuicGoClientConn(t, addr, clientTLS, &quicgohttp3.Transport{})
					rs, err := cc.OpenRequestStream(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					rs.SetDeadline(time.Now().Add(5 * time.Second))
					str = rs
					cancelWrite = func(c quic.StreamErrorCode) { rs.CancelWrite(quicgo.StreamErrorCode(c)) }
					closeConn = func(c quic.ApplicationErrorCode) { cc.CloseWithError(quicgo.ApplicationErrorCode(c), "") }
				}
				if err := str.SendRequestHeader(mustRequest(t, localhostURL(t, addr, "/cancel"))); err != nil {
					t.Fatal(err)
				}
				if _, err := str.ReadResponse(); err != nil {
					t.Fatal(err)
				}
				var srv serverStream
				switch s := (<-streams).(type) {
				case *Stream:
					srv = s
					s.SetDeadline(time.Now().Add(5 * time.Second))
				case *quicgohttp3.Stream:
					srv = quicGoStream{s}
					s.SetDeadline(time.Now().Add(5 * time.Second))
				}
				wantServerWrite, wantClientRead := false, true // remote?
				if errorType == "stream cancellation" {
					cancelWrite(quic.StreamErrorCode(ErrCodeExcessiveLoad))
					srv.CancelWrite(quic.StreamErrorCode(ErrCodeExcessiveLoad))
				} else {
					closeConn(quic.ApplicationErrorCode(ErrCodeExcessiveLoad))
					wantServerWrite, wantClientRead = true, false
				}
				if _, err := str.Write([]byte{0}); !isH3Error(err, ErrCodeExcessiveLoad, false) {
					t.Fatalf("RequestStream.Write: %v", err)
				}
				_, err := srv.Read([]byte{0})
				if !isH3Error(err, ErrCodeExcessiveLoad, true) {
					t.Fatalf("server Stream.Read: %v", err)
				}
				if errorType == "application close" && !errors.Is(err, net.ErrClosed) {
					t.Fatalf("server Stream.Read after the connection closed: %v, want net.ErrClosed", err)
				}
				if _, err := srv.Write([]byte{0}); !isH3Error(err, ErrCodeExcessiveLoad, wantServerWrite) {
					t.Fatalf("server Stream.Write: %v", err)
				}
				if _, err := str.Read([]byte{0}); !isH3Error(err, ErrCodeExcessiveLoad, wantClientRead) {
					t.Fatalf("RequestStream.Read: %v", err)
				}
			})
		}
	}
}

// quicGoStream adapts quic-go's Stream, whose CancelWrite takes
// quic-go's code type.
type quicGoStream struct{ *quicgohttp3.Stream }

func (s quicGoStream) CancelWrite(c quic.StreamErrorCode) {
	s.Stream.CancelWrite(quicgo.StreamErrorCode(c))
}
func (s quicGoStream) StreamID() quic.StreamID { return quic.StreamID(s.Stream.StreamID()) }

// isH3Error reports whether err is our *Error or quic-go's with code and
// origin.
func isH3Error(err error, code ErrCode, remote bool) bool {
	if errors.Is(err, &Error{ErrorCode: code, Remote: remote}) {
		return true
	}
	return errors.Is(err, &quicgohttp3.Error{ErrorCode: quicgohttp3.ErrCode(code), Remote: remote})
}
