package http3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

// Cases that quic-go's own integration tests (integrationtests/self, run
// on our stack with the imports swapped) found, each checked here with
// quic-go's server and ours.

// TestBodyReadAfterContextCancel is the "after response" case of quic-go's
// TestHTTPClientRequestContextCancellation: once the request's context
// ends, the handler's writes fail with the client's
// H3_REQUEST_CANCELLED and the body read returns an *Error with that code
// that also matches the context's error (what net/http returns).
func TestBodyReadAfterContextCancel(t *testing.T) {
	checkGoroutines(t)
	for _, sp := range serverPeers {
		t.Run(sp.name, func(t *testing.T) {
			writeErr := make(chan error, 1)
			addr, clientTLS := sp.start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for {
					if _, err := io.WriteString(w, "foobar"); err != nil {
						writeErr <- err
						return
					}
				}
			}), nil, nil)
			tr := &Transport{TLSClientConfig: clientTLS}
			defer tr.Close()
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, localhostURL(t, addr, "/"), nil)
			rsp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-writeErr; !isH3Error(err, ErrCodeRequestCanceled, true) {
				t.Fatalf("handler's write: %v, want the client's H3_REQUEST_CANCELLED", err)
			}
			_, err = rsp.Body.Read(make([]byte, 1))
			var e *Error
			if !errors.As(err, &e) || e.ErrorCode != ErrCodeRequestCanceled || e.Remote || !errors.Is(err, context.Canceled) {
				t.Fatalf("body read: %v, want a local H3_REQUEST_CANCELLED matching context.Canceled", err)
			}
		})
	}
}

// TestRequestAfterIdleClose is quic-go's TestHTTPRequestRetryAfterIdleTimeout
// with the server's IdleTimeout closing the connection: a closed
// connection is not cached (RoundTripOpt with OnlyCachedConn fails with
// ErrNoCachedConn, dialing nothing), and a request with a body that
// cannot be replayed still goes out on a new connection, since it was
// never sent on the closed one. In virtual time: each new connection's
// request must reach the server within the 50 ms IdleTimeout, which a
// loaded machine cannot promise on the wall clock.
func TestRequestAfterIdleClose(t *testing.T) {
	simTest(t, testRequestAfterIdleClose)
}

func testRequestAfterIdleClose(t *testing.T, n *simnet.Network) {
	addr, clientTLS := simServe(t, n, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	}), IdleTimeout: 50 * time.Millisecond})
	tr := simTransport(t, n, clientTLS)
	post := func(opt RoundTripOpt) (string, error) {
		req, _ := http.NewRequest(http.MethodPost, localhostURL(t, addr, "/"), io.LimitReader(neverEnding('x'), 6))
		rsp, err := tr.RoundTripOpt(req, opt)
		if err != nil {
			return "", err
		}
		defer rsp.Body.Close()
		b, err := io.ReadAll(rsp.Body)
		return string(b), err
	}
	if b, err := post(RoundTripOpt{}); err != nil || b != "xxxxxx" {
		t.Fatalf("first request: %q %v", b, err)
	}
	tr.mu.Lock()
	var cc *ClientConn
	for _, c := range tr.conns {
		cc = c
	}
	tr.mu.Unlock()
	<-cc.Context().Done() // the server's IdleTimeout
	// Still in the pool until its close is noticed there: it must count
	// as gone all the same.
	tr.mu.Lock()
	tr.conns[authorityAddr(mustRequest(t, localhostURL(t, addr, "/")).URL)] = cc
	tr.mu.Unlock()
	if _, err := post(RoundTripOpt{OnlyCachedConn: true}); !errors.Is(err, ErrNoCachedConn) {
		t.Fatalf("OnlyCachedConn after the close: %v, want ErrNoCachedConn", err)
	}
	// The same on the request path: a pooled connection that closes
	// before the stream opens sends the request elsewhere.
	tr.mu.Lock()
	tr.conns[authorityAddr(mustRequest(t, localhostURL(t, addr, "/")).URL)] = cc
	tr.mu.Unlock()
	cc.mu.Lock()
	cc.active++ // as getConn would have counted it
	cc.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, localhostURL(t, addr, "/"), io.LimitReader(neverEnding('y'), 3))
	if _, err := cc.roundTrip(req); !errors.As(err, new(*connUnusableError)) {
		t.Fatalf("round trip on the closed connection: %v, want a connection-unusable error", err)
	} else if next, rerr := replayable(req, err); next != req || rerr != nil {
		t.Fatal("a request never sent is not replayed as it is")
	}
	if b, err := post(RoundTripOpt{}); err != nil || b != "xxxxxx" {
		t.Fatalf("request after the close: %q %v", b, err)
	}
}

// TestWriteFailsOnceConnectionClosed is the write side of quic-go's
// TestGracefulShutdownLongLivedRequest: once the connection is gone, a
// handler's Write fails at once instead of filling the response buffer.
func TestWriteFailsOnceConnectionClosed(t *testing.T) {
	checkGoroutines(t)
	writeErr := make(chan error, 1)
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client closed the connection
		// The first Write fails: the request's context can end a moment
		// before the stream's (both are the connection's children), so
		// the writer asks the connection too; a small Write would
		// otherwise only buffer (6 runs in 1 500 under -race before).
		_, err := w.Write([]byte("x"))
		writeErr <- err
	}))
	tr := &Transport{TLSClientConfig: clientTLS}
	rsp, err := tr.RoundTrip(mustRequest(t, localhostURL(t, addr, "/")))
	if err != nil {
		t.Fatal(err)
	}
	// The body stays open until the connection closed: closing it first
	// sends STOP_SENDING (H3_REQUEST_CANCELLED), which could reach the
	// handler before the close (1 run in 10 under -race).
	tr.Close()
	// Transport.Close closes with application error 0, as quic-go's.
	if err := <-writeErr; !isH3Error(err, 0, true) {
		t.Fatalf("write after the client closed: %v, want the client's close with code 0", err)
	}
	rsp.Body.Close()
}

func TestSetQUICHeadersPortZero(t *testing.T) {
	if err := (&Server{Addr: "127.0.0.1:0"}).SetQUICHeaders(http.Header{}); !errors.Is(err, ErrNoAltSvcPort) {
		t.Fatalf("Addr with port 0 before listening: %v", err)
	}
	h := http.Header{}
	if err := (&Server{Addr: "127.0.0.1:8443"}).SetQUICHeaders(h); err != nil || h.Get("Alt-Svc") != `h3=":8443"; ma=2592000` {
		t.Fatalf("%v %v", h, err)
	}
}

// TestListenAndServeShutdownDrains is the "listener created by the
// http3.Server" case of quic-go's TestHTTP3ListenerGracefulShutdown:
// ListenAndServe returns ErrServerClosed when Shutdown starts, but its
// socket stays open until the request in flight completed; it used to be
// closed at once, killing that request.
func TestListenAndServeShutdownDrains(t *testing.T) {
	checkGoroutines(t)
	serverTLS, clientTLS := testCert(t)
	started, release := make(chan struct{}), make(chan struct{})
	s := &Server{Addr: "127.0.0.1:0", TLSConfig: serverTLS, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "done")
	})}
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe() }()
	var port string
	for i := 0; ; i++ { // until it listens
		h := http.Header{}
		if s.SetQUICHeaders(h) == nil {
			v := h.Get("Alt-Svc")
			port = v[len(`h3=":`):strings.Index(v, `";`)]
			break
		}
		if i == 5000 {
			t.Fatal("not listening")
		}
		time.Sleep(time.Millisecond)
	}
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	got := make(chan error, 1)
	go func() {
		rsp, err := tr.RoundTrip(mustRequest(t, "https://localhost:"+port+"/"))
		if err == nil {
			var b []byte
			b, err = io.ReadAll(rsp.Body)
			if err == nil && string(b) != "done" {
				err = errors.New("body " + string(b))
			}
		}
		got <- err
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("ListenAndServe returned %v", err)
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
