package http3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quic"
)

// connectRequest is an extended CONNECT for proto to authority.
func connectRequest(authority, proto string) *http.Request {
	return &http.Request{Method: http.MethodConnect, Proto: proto, Host: authority,
		URL: &url.URL{Scheme: "https", Host: authority, Path: "/tunnel"}, Header: http.Header{}}
}

// takeOverHandler answers an extended CONNECT with 200, takes the stream
// over and hands it to the test; with echo it echoes datagrams until the
// stream ends.
func takeOverHandler(t *testing.T, streams chan<- *Stream, echo bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		s, err := w.(HTTPStreamer).HTTPStream()
		if err != nil {
			t.Error(err)
			return
		}
		if streams != nil {
			streams <- s
		}
		if echo {
			go func() {
				for {
					d, err := s.ReceiveDatagram(context.Background())
					if err != nil {
						return
					}
					s.SendDatagram(d)
				}
			}()
		}
	})
}

// openTunnel sends an extended CONNECT on a new request stream of cc.
func openTunnel(t *testing.T, cc *ClientConn, authority string) *RequestStream {
	t.Helper()
	rs, err := cc.OpenRequestStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.SendRequestHeader(connectRequest(authority, "test-tunnel")); err != nil {
		t.Fatal(err)
	}
	if rsp, err := rs.ReadResponse(); err != nil || rsp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT answered %v %v", rsp, err)
	}
	return rs
}

// wantEcho sends a datagram on rs until its echo comes back.
func wantEcho(t *testing.T, rs *RequestStream, payload string) {
	t.Helper()
	for range 20 {
		if err := rs.SendDatagram([]byte(payload)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		d, err := rs.ReceiveDatagram(ctx)
		cancel()
		if err == nil && string(d) == payload {
			return
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
	}
	t.Fatalf("no echo of %q", payload)
}

// TestDatagramQueueBounded floods a stream whose owner never reads its
// datagrams: the server keeps at most streamDatagramQueue of them, and
// another stream of the same connection still gets its echoes.
func TestDatagramQueueBounded(t *testing.T) {
	checkGoroutines(t)
	streams := make(chan *Stream, 2)
	addr, clientTLS := ourDatagramServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		takeOverHandler(t, streams, r.URL.Query().Get("echo") != "").ServeHTTP(w, r)
	}))
	authority := "localhost:" + addr[len("127.0.0.1:"):]
	cc := dialOurClientConn(t, addr, clientTLS, &Transport{EnableDatagrams: true})
	sink := openTunnel(t, cc, authority)
	sinkSrv := <-streams
	queued := func() int {
		sinkSrv.ends.dg.mu.Lock()
		defer sinkSrv.ends.dg.mu.Unlock()
		return len(sinkSrv.ends.dg.queue)
	}
	for i := 0; queued() < streamDatagramQueue; i++ {
		if i == 100000 {
			t.Fatalf("%d datagrams sent, %d queued", i, queued())
		}
		if err := sink.SendDatagram(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if i%32 == 31 {
			time.Sleep(time.Millisecond) // let the QUIC send queue drain
		}
	}
	for range 1000 { // far past the bound
		if err := sink.SendDatagram(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	// The echo's datagram follows the flood through the same receive
	// loop, so once it is back the flood has been handled.
	rs, err := cc.OpenRequestStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := connectRequest(authority, "test-tunnel")
	req.URL.RawQuery = "echo=1"
	if err := rs.SendRequestHeader(req); err != nil {
		t.Fatal(err)
	}
	if rsp, err := rs.ReadResponse(); err != nil || rsp.StatusCode != 200 {
		t.Fatalf("echo tunnel: %v %v", rsp, err)
	}
	<-streams
	wantEcho(t, rs, "benign")
	if n := queued(); n != streamDatagramQueue {
		t.Fatalf("%d datagrams queued for a stream that never reads, want the bound %d", n, streamDatagramQueue)
	}
	// Its datagrams are still there for it, in order of arrival.
	if d, err := sinkSrv.ReceiveDatagram(context.Background()); err != nil || len(d) != 100 {
		t.Fatalf("queued datagram %d bytes, %v", len(d), err)
	}
}

// TestDatagramErrors: malformed HTTP datagrams close the connection with
// H3_DATAGRAM_ERROR (RFC 9297 section 2.1); one for a stream that does
// not exist is dropped and the connection goes on.
func TestDatagramErrors(t *testing.T) {
	checkGoroutines(t)
	addr, clientTLS := ourDatagramServer(t, takeOverHandler(t, nil, true))
	authority := "localhost:" + addr[len("127.0.0.1:"):]
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"empty", []byte{}},
		{"truncated Quarter Stream ID", []byte{0x40}},
		{"Quarter Stream ID above 2^60-1", wire.AppendVarint(nil, maxQuarterStreamID+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := dialOurClientConn(t, addr, clientTLS, &Transport{EnableDatagrams: true})
			<-cc.ReceivedSettings()
			// Unknown streams first: dropped, the connection goes on.
			if err := cc.qc.SendDatagram(append(wire.AppendVarint(nil, 1000), "lost"...)); err != nil {
				t.Fatal(err)
			}
			wantEcho(t, openTunnel(t, cc, authority), "still up")
			if err := cc.qc.SendDatagram(tc.payload); err != nil {
				t.Fatal(err)
			}
			<-cc.Context().Done()
			var ae *quic.ApplicationError
			if err := context.Cause(cc.Context()); !errors.As(err, &ae) || !ae.Remote || ErrCode(ae.ErrorCode) != ErrCodeDatagramError {
				t.Fatalf("connection closed with %v, want the server's H3_DATAGRAM_ERROR", err)
			}
		})
	}
}

// TestDatagramSettingWithoutQUICDatagrams: SETTINGS_H3_DATAGRAM from a
// peer that did not send max_datagram_frame_size is H3_SETTINGS_ERROR
// (RFC 9297 section 2.1.1).
func TestDatagramSettingWithoutQUICDatagrams(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, http.NotFoundHandler(), func(s *Server) { s.EnableDatagrams = true })
	c := dialRaw(t, addr, clientTLS) // QUIC datagrams off
	c.openUni(settings{H3Datagram: true}.append(appendStreamType(nil, streamTypeControl)))
	c.wantConnClosed(ErrCodeSettingsError)
}

// TestDatagramsNotNegotiated: without EnableDatagrams on our side, or
// when the peer did not enable them, SendDatagram and ReceiveDatagram
// fail at once instead of sending what the peer would drop.
func TestDatagramsNotNegotiated(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		name             string
		server, client   bool
		sendErr, recvErr bool
	}{
		{"client off", true, false, true, true},
		{"server off", false, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr, clientTLS := startServer(t, takeOverHandler(t, nil, false), func(s *Server) { s.EnableDatagrams = tc.server })
			cc := dialOurClientConn(t, addr, clientTLS, &Transport{EnableDatagrams: tc.client})
			<-cc.ReceivedSettings()
			rs := openTunnel(t, cc, "localhost:"+addr[len("127.0.0.1:"):])
			if err := rs.SendDatagram([]byte("x")); (err != nil) != tc.sendErr {
				t.Fatalf("SendDatagram: %v", err)
			}
			if tc.recvErr {
				if _, err := rs.ReceiveDatagram(context.Background()); !errors.Is(err, errDatagramsDisabled) {
					t.Fatalf("ReceiveDatagram: %v", err)
				}
			}
		})
	}
	if err := (&Transport{EnableDatagrams: true, QUICConfig: &quic.Config{}}).roundTripCheck(); err == nil {
		t.Fatal("HTTP datagrams without QUIC datagrams accepted")
	}
}

// TestExtendedConnectNeedsSetting: our client sends :protocol only to a
// server whose SETTINGS enabled extended CONNECT (RFC 9220 section 3).
func TestExtendedConnectNeedsSetting(t *testing.T) {
	cc := &ClientConn{}
	cc.peer = newPeerState(nil, false, nil)
	cc.peer.onSettings(settings{})
	if err := cc.checkExtendedConnect(context.Background()); err == nil {
		t.Fatal("extended CONNECT allowed without SETTINGS_ENABLE_CONNECT_PROTOCOL")
	}
	cc.peer = newPeerState(nil, false, nil)
	cc.peer.onSettings(settings{EnableConnectProtocol: true})
	if err := cc.checkExtendedConnect(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPStreamRules: HTTPStream after body bytes fails; taken over
// without a header, the stream cannot write DATA; afterwards Write
// returns http.ErrHijacked and WriteHeader panics, as in quic-go.
func TestHTTPStreamRules(t *testing.T) {
	checkGoroutines(t)
	results := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/after-body", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("x"))
		_, err := w.(HTTPStreamer).HTTPStream()
		results <- fmt.Sprint(err != nil)
	})
	mux.HandleFunc("/no-header", func(w http.ResponseWriter, r *http.Request) {
		s, err := w.(HTTPStreamer).HTTPStream()
		if err != nil {
			results <- err.Error()
			return
		}
		s2, _ := w.(HTTPStreamer).HTTPStream()
		_, werr := s.Write([]byte("data"))
		_, herr := w.Write([]byte("x"))
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			w.WriteHeader(200)
			return false
		}()
		results <- fmt.Sprint(s2 == s, errors.Is(werr, errNoResponseHeader), errors.Is(herr, http.ErrHijacked), panicked)
		s.CancelWrite(quic.StreamErrorCode(ErrCodeRequestCanceled))
		s.CancelRead(quic.StreamErrorCode(ErrCodeNoError))
	})
	_, addr, clientTLS := startServer(t, mux)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	rsp, err := c.Get(localhostURL(t, addr, "/after-body"))
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if r := <-results; r != "true" {
		t.Fatal("HTTPStream after a body write succeeded")
	}
	if _, err := c.Get(localhostURL(t, addr, "/no-header")); err == nil {
		t.Fatal("a response arrived from a stream taken over without a header")
	}
	if r := <-results; r != "true true true true" {
		t.Fatalf("same stream, no DATA before a header, ErrHijacked, WriteHeader panics: %s", r)
	}
}

// TestTakenOverStreamStaysActive: a stream taken over counts as a request
// in progress after its handler returned (so IdleTimeout and a graceful
// close wait for it), until both its directions ended.
func TestTakenOverStreamStaysActive(t *testing.T) {
	checkGoroutines(t)
	streams := make(chan *Stream, 1)
	s, addr, clientTLS := startServer(t, takeOverHandler(t, streams, false))
	cc := dialOurClientConn(t, addr, clientTLS, &Transport{})
	rs := openTunnel(t, cc, "localhost:"+addr[len("127.0.0.1:"):])
	srv := <-streams
	conns := s.openConns()
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	sc := conns[0]
	sc.requests.Wait() // the handler returned
	active := func() int {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return sc.active
	}
	if n := active(); n != 1 {
		t.Fatalf("%d active requests after the handler returned, want the stream it took over", n)
	}
	rs.Close()
	if _, err := srv.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data the client never sent")
	}
	if n := active(); n != 1 {
		t.Fatalf("%d active requests with the server's side still open", n)
	}
	srv.Close()
	testutil.WaitFor(t, "the stream to end after both sides closed", func() bool { return active() == 0 })
	if st := s.Stats(); st.RequestsActive != 0 || st.Requests != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTakenOverStreamDatagramsEndWithConnection: a taken-over stream whose
// send side its owner closed first still learns of the connection's close
// in ReceiveDatagram (it must not wait for good once nothing can arrive).
func TestTakenOverStreamDatagramsEndWithConnection(t *testing.T) {
	checkGoroutines(t)
	streams := make(chan *Stream, 1)
	addr, clientTLS := ourDatagramServer(t, takeOverHandler(t, streams, false))
	cc := dialOurClientConn(t, addr, clientTLS, &Transport{EnableDatagrams: true})
	rs := openTunnel(t, cc, "localhost:"+addr[len("127.0.0.1:"):])
	srv := <-streams
	srv.Close() // the server's send side ends first, the connection still up
	if _, err := rs.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data the server never sent")
	}
	testutil.WaitFor(t, "the server's send side to be seen ended", func() bool {
		srv.ends.mu.Lock()
		defer srv.ends.mu.Unlock()
		return srv.ends.send
	})
	cc.CloseWithError(0, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.ReceiveDatagram(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReceiveDatagram after the connection closed: %v, want the close", err)
	}
}
