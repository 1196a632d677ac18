package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
	"github.com/turboretry/turboretry/quic"
)

// TestRawConns is quic-go's TestHTTPRawConn across implementations: the
// application runs both sides' accept loops, hands HTTP/3's streams to
// the raw connections and keeps a bidirectional stream of its own (an
// echo) on the same QUIC connection, as WebTransport does.
func TestRawConns(t *testing.T) {
	checkGoroutines(t)
	const data = "raw connection data"
	mux := http.NewServeMux()
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, data) })
	for _, tc := range []struct {
		name           string
		ourSrv, ourCli bool
	}{{"ours-ours", true, true}, {"ours-quicgo", true, false}, {"quicgo-ours", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			serverTLS, clientTLS := testCert(t)
			var addr string
			if tc.ourSrv {
				addr = serveOurRaw(t, serverTLS, &Server{Handler: mux, EnableDatagrams: true})
			} else {
				addr = serveQuicGoRaw(t, serverTLS, &quicgohttp3.Server{Handler: mux, EnableDatagrams: true})
			}
			url := localhostURL(t, addr, "/data")
			if tc.ourCli {
				qc, err := quic.DialAddr(context.Background(), addr, clientTLS, &quic.Config{EnableDatagrams: true})
				if err != nil {
					t.Fatal(err)
				}
				defer qc.CloseWithError(0, "")
				rc := (&Transport{EnableDatagrams: true}).NewRawClientConn(qc)
				go func() {
					for {
						str, err := qc.AcceptUniStream(context.Background())
						if err != nil {
							return
						}
						go rc.HandleUnidirectionalStream(str)
					}
				}()
				<-rc.ReceivedSettings()
				if !rc.Settings().EnableDatagrams {
					t.Fatal("the raw server's SETTINGS do not enable datagrams")
				}
				rs, err := rc.OpenRequestStream(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				getOnStream(t, rs, url, data)
				echoOnOwnStream(t, func() (io.ReadWriteCloser, error) { return qc.OpenStream() })
			} else {
				qc, err := quicgo.DialAddr(context.Background(), addr, clientTLS, &quicgo.Config{EnableDatagrams: true})
				if err != nil {
					t.Fatal(err)
				}
				defer qc.CloseWithError(0, "")
				rc := (&quicgohttp3.Transport{EnableDatagrams: true}).NewRawClientConn(qc)
				go func() {
					for {
						str, err := qc.AcceptUniStream(context.Background())
						if err != nil {
							return
						}
						go rc.HandleUnidirectionalStream(str)
					}
				}()
				<-rc.ReceivedSettings()
				if !rc.Settings().EnableDatagrams {
					t.Fatal("our raw server's SETTINGS do not enable datagrams")
				}
				rs, err := rc.OpenRequestStream(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				getOnStream(t, rs, url, data)
				echoOnOwnStream(t, func() (io.ReadWriteCloser, error) { return qc.OpenStream() })
			}
		})
	}
}

func getOnStream(t *testing.T, rs reqStream, url, want string) {
	t.Helper()
	if err := rs.SendRequestHeader(mustRequest(t, url)); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	rsp, err := rs.ReadResponse()
	if err != nil || rsp.StatusCode != 200 {
		t.Fatalf("response %v %v", rsp, err)
	}
	b, err := io.ReadAll(rsp.Body)
	if err != nil || string(b) != want {
		t.Fatalf("body %q %v", b, err)
	}
	rsp.Body.Close()
}

// echoOnOwnStream opens the application's own bidirectional stream (the
// second one: the server's loop tells them apart by ID) and checks the
// echo.
func echoOnOwnStream(t *testing.T, open func() (io.ReadWriteCloser, error)) {
	t.Helper()
	str, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(str, "lorem ipsum"); err != nil {
		t.Fatal(err)
	}
	str.Close()
	if b, err := io.ReadAll(str); err != nil || string(b) != "lorem ipsum" {
		t.Fatalf("echo %q %v", b, err)
	}
}

// rawServer is one implementation's side of TestRawConns: accept takes
// the one connection and returns its stream accept functions, each
// returning what to run for the next stream (false once the connection
// ended).
type rawServer struct {
	addr   string
	accept func() (uni, bidi func() (func(), bool), err error)
	close  func()
}

// serveRaw runs the application's accept loops on the server's one
// connection: the first bidirectional stream is HTTP/3's, the second the
// application's echo.
func serveRaw(t *testing.T, rs rawServer) string {
	done := make(chan struct{})
	t.Cleanup(func() {
		rs.close()
		<-done
	})
	loop := func(next func() (func(), bool)) {
		for {
			run, ok := next()
			if !ok {
				return
			}
			go run()
		}
	}
	go func() {
		defer close(done)
		uni, bidi, err := rs.accept()
		if err != nil {
			return
		}
		go loop(uni)
		loop(bidi)
	}()
	return rs.addr
}

func echoStream(s io.ReadWriteCloser) {
	defer s.Close()
	io.Copy(s, s)
}

func serveOurRaw(t *testing.T, serverTLS *tls.Config, s *Server) string {
	ln, err := quic.ListenAddrEarly("127.0.0.1:0", ConfigureTLSConfig(serverTLS), &quic.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	return serveRaw(t, rawServer{addr: ln.Addr().String(), close: func() { ln.Close() },
		accept: func() (func() (func(), bool), func() (func(), bool), error) {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return nil, nil, err
			}
			rc, err := s.NewRawServerConn(qc)
			if err != nil {
				t.Error(err)
				return nil, nil, err
			}
			uni := func() (func(), bool) {
				str, err := qc.AcceptUniStream(context.Background())
				return func() { rc.HandleUnidirectionalStream(str) }, err == nil
			}
			bidi := func() (func(), bool) {
				str, err := qc.AcceptStream(context.Background())
				if err == nil && str.StreamID() == 0 {
					return func() { rc.HandleRequestStream(str) }, true
				}
				return func() { echoStream(str) }, err == nil
			}
			return uni, bidi, nil
		}})
}

func serveQuicGoRaw(t *testing.T, serverTLS *tls.Config, s *quicgohttp3.Server) string {
	ln, err := quicgo.ListenAddrEarly("127.0.0.1:0", quicgohttp3.ConfigureTLSConfig(serverTLS), &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	return serveRaw(t, rawServer{addr: ln.Addr().String(), close: func() { ln.Close() },
		accept: func() (func() (func(), bool), func() (func(), bool), error) {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return nil, nil, err
			}
			rc, err := s.NewRawServerConn(qc)
			if err != nil {
				t.Error(err)
				return nil, nil, err
			}
			uni := func() (func(), bool) {
				str, err := qc.AcceptUniStream(context.Background())
				return func() { rc.HandleUnidirectionalStream(str) }, err == nil
			}
			bidi := func() (func(), bool) {
				str, err := qc.AcceptStream(context.Background())
				if err == nil && str.StreamID() == 0 {
					return func() { rc.HandleRequestStream(str) }, true
				}
				return func() { echoStream(str) }, err == nil
			}
			return uni, bidi, nil
		}})
}

// TestRawClientRefusesServerBidiStream: a bidirectional stream the server
// opens is a connection error (RFC 9114 section 6.1) when the
// application hands it to HandleBidirectionalStream; quic-go's server
// sees H3_STREAM_CREATION_ERROR.
func TestRawClientRefusesServerBidiStream(t *testing.T) {
	checkGoroutines(t)
	serverTLS, clientTLS := testCert(t)
	ln, err := quicgo.ListenAddr("127.0.0.1:0", quicgohttp3.ConfigureTLSConfig(serverTLS), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan error, 1)
	go func() {
		qc, err := ln.Accept(context.Background())
		if err != nil {
			closed <- err
			return
		}
		str, err := qc.OpenStream()
		if err == nil {
			_, err = str.Write([]byte("x"))
		}
		if err != nil {
			closed <- err
			return
		}
		<-qc.Context().Done()
		closed <- context.Cause(qc.Context())
	}()
	qc, err := quic.DialAddr(context.Background(), ln.Addr().String(), clientTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	rc := (&Transport{}).NewRawClientConn(qc)
	str, err := qc.AcceptStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rc.HandleBidirectionalStream(str)
	var ae *quicgo.ApplicationError
	if err := <-closed; !errors.As(err, &ae) || !ae.Remote || ErrCode(ae.ErrorCode) != ErrCodeStreamCreationError {
		t.Fatalf("quic-go's server saw %v, want our H3_STREAM_CREATION_ERROR", err)
	}
	if _, err := rc.OpenRequestStream(context.Background()); err == nil {
		t.Fatal("a request stream opened on the closed connection")
	}
}
