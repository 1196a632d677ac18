package http3

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// blockingHandler serves /slow by waiting for release before answering,
// and everything else with testHandler. started receives one value per
// /slow request that began.
func blockingHandler(started chan<- struct{}, release <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", testHandler())
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "finished")
	})
	return mux
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	rsp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	return string(b), err
}

func TestShutdownCompletesInFlightRequest(t *testing.T) {
	checkGoroutines(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	s, addr, clientTLS := startServer(t, blockingHandler(started, release))
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	// A short handshake timeout, only for the last dial: it must fail,
	// quickly. The first dial keeps the default, which a stall of the
	// machine cannot reach.
	lateTr := &Transport{TLSClientConfig: clientTLS, QUICConfig: &quic.Config{HandshakeIdleTimeout: 300 * time.Millisecond}}
	defer lateTr.Close()
	late := &http.Client{Transport: lateTr}

	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		b, err := get(t, client, "https://"+addr+"/slow")
		res <- result{b, err}
	}()
	select {
	case <-started:
	case r := <-res:
		t.Fatalf("in-flight request ended before its handler began: %q, %v", r.body, r.err)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitGoAway(t, tr)
	close(release)
	if r := <-res; r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := get(t, late, "https://"+addr+"/hello"); err == nil {
		t.Fatal("request after Shutdown succeeded")
	}
}

// waitGoAway waits until a connection of tr received GOAWAY.
func waitGoAway(t *testing.T, tr *Transport) {
	t.Helper()
	for {
		tr.mu.Lock()
		n := len(tr.conns)
		tr.mu.Unlock()
		if n == 0 { // forgotten: GOAWAY arrived
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClientHonoursGoAway(t *testing.T) {
	checkGoroutines(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	var conns atomic.Int64
	s, addr, clientTLS := startServer(t, blockingHandler(started, release), func(s *Server) {
		s.ConnContext = func(ctx context.Context, _ *quic.Conn) context.Context {
			conns.Add(1)
			return ctx
		}
	})
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	base := "https://" + addr

	if _, err := get(t, client, base+"/hello"); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		b, err := get(t, client, base+"/slow")
		if err == nil && b != "finished" {
			err = errors.New("body " + b)
		}
		res <- err
	}()
	<-started
	// GOAWAY on the open connection, the listener stays open.
	s.mu.Lock()
	for sc := range s.conns {
		go sc.goAway()
	}
	s.mu.Unlock()
	waitGoAway(t, tr)
	if b, err := get(t, client, base+"/hello"); err != nil || b != "hello HTTP/3.0" {
		t.Fatalf("request after GOAWAY: %q, %v", b, err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want a second one after GOAWAY", n)
	}
	close(release)
	if err := <-res; err != nil {
		t.Fatalf("request in flight at GOAWAY: %v", err)
	}
}

// recordingHandler keeps the slog records it is given.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// errors returns the ERROR records as "message: attr=value ..." strings.
func (h *recordingHandler) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level != slog.LevelError {
			continue
		}
		s := r.Message
		r.Attrs(func(a slog.Attr) bool {
			s += " " + a.Key + "=" + a.Value.String()
			return true
		})
		out = append(out, s)
	}
	return out
}

// TestServerRecoversHandlerPanic: a panicking handler resets its stream
// with H3_INTERNAL_ERROR, is logged at ERROR with the panic value and the
// stack, and counted; a request in flight on the same connection
// completes, and http.ErrAbortHandler is neither logged nor counted.
func TestServerRecoversHandlerPanic(t *testing.T) {
	checkGoroutines(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/", blockingHandler(started, release))
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	logs := &recordingHandler{}
	s, addr, clientTLS := startServer(t, mux, func(s *Server) { s.Logger = slog.New(logs) })
	c := dialRaw(t, addr, clientTLS)
	c.control()
	path := func(p string) []byte {
		return requestSection(t, ":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", p)
	}
	slow := c.request(path("/slow"))
	<-started
	wantStreamReset(t, c.request(path("/panic")), ErrCodeInternalError)
	wantStreamReset(t, c.request(path("/abort")), ErrCodeInternalError)
	close(release)
	if b, err := io.ReadAll(slow); err != nil || !strings.Contains(string(b), "finished") {
		t.Fatalf("request beside the panic: %q, %v", b, err)
	}
	c.helloOn()
	if n := s.Stats().HandlerPanics; n != 1 {
		t.Fatalf("HandlerPanics %d, want 1", n)
	}
	errs := logs.errors()
	if len(errs) != 1 || !strings.Contains(errs[0], "panic=boom") || !strings.Contains(errs[0], "stack=goroutine") ||
		!strings.Contains(errs[0], "TestServerRecoversHandlerPanic") {
		t.Fatalf("ERROR records %q, want one with the panic and its stack", errs)
	}
}

func TestInterimResponsesAndLargeHeaders(t *testing.T) {
	checkGoroutines(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/early", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	})
	_, addr, clientTLS := startServer(t, mux, func(s *Server) { s.MaxHeaderBytes = 300 })

	// Our client skips the 103 and returns the final response.
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	rsp, err := client.Get("https://" + addr + "/early")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if rsp.StatusCode != 200 || string(b) != "final" || rsp.Header.Get("Link") != "" {
		t.Fatalf("status %d body %q header %v", rsp.StatusCode, b, rsp.Header)
	}

	// The raw stream shows the 103 before the 200.
	c := dialRaw(t, addr, clientTLS)
	c.control()
	raw, err := io.ReadAll(c.request(requestSection(t, ":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", "/early")))
	if err != nil {
		t.Fatal(err)
	}
	fr := newFrameReader(strings.NewReader(string(raw)), 0)
	var statuses []int
	for {
		f, err := fr.readFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := f.(headersFrame); ok {
			rsp, err := decodeResponse(h.FieldSection, 0)
			if err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, rsp.StatusCode)
		}
	}
	if len(statuses) != 2 || statuses[0] != 103 || statuses[1] != 200 {
		t.Fatalf("statuses %v, want [103 200]", statuses)
	}

	// A header section over MaxHeaderBytes gets 431, on a raw
	// connection and from our client, which sends it as quic-go's does.
	c2 := dialRaw(t, addr, clientTLS)
	c2.control()
	raw, err = io.ReadAll(c2.request(requestSection(t, append(goodRequest, "x-big", strings.Repeat("a", 400))...)))
	if err != nil {
		t.Fatal(err)
	}
	if code := readResponseStatus(t, newFrameReader(strings.NewReader(string(raw)), 0)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("response %d, want 431", code)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/early", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 400))
	rsp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("our client's header over the server's limit: %d, want 431", rsp.StatusCode)
	}
}

func TestRequestContextCanceledByClientReset(t *testing.T) {
	checkGoroutines(t)
	canceled := make(chan error, 1)
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		canceled <- r.Context().Err()
	})
	_, addr, clientTLS := startServer(t, h)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip returned %v, want context.Canceled", err)
	}
	if err := <-canceled; err == nil {
		t.Fatal("handler context not canceled")
	}
}

func TestSetQUICHeaders(t *testing.T) {
	s, addr, _ := startServer(t, testHandler())
	_, port, _ := net.SplitHostPort(addr)
	h := http.Header{}
	if err := s.SetQUICHeaders(h); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("Alt-Svc"), `h3=":`+port+`"; ma=2592000`; got != want {
		t.Fatalf("Alt-Svc %q, want %q", got, want)
	}
	if err := (&Server{}).SetQUICHeaders(h); err == nil {
		t.Fatal("SetQUICHeaders without a port succeeded")
	}
}

func TestShutdownContextEndsFirst(t *testing.T) {
	checkGoroutines(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	s, addr, clientTLS := startServer(t, blockingHandler(started, release))
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	res := make(chan error, 1)
	go func() {
		_, err := get(t, &http.Client{Transport: tr}, "https://"+addr+"/slow")
		res <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown returned %v, want context.Canceled", err)
	}
	var e *Error
	if err := <-res; !errors.As(err, &e) || !e.Remote || e.ErrorCode != ErrCodeNoError {
		t.Fatalf("in-flight request ended with %v, want the server's close with H3_NO_ERROR", err)
	}
}
