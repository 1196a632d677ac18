package http3

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

// TestRequestBodyReadAfterHandler: a handler may leave a goroutine that
// reads the request body after it returned (net/http's Transport does,
// forwarding a body to an upstream that answered before reading it all:
// the HTTP/2 proxying of gRPC). Such a Read, whether under way when the
// handler returns or started later, ends with an error and touches
// nothing the server reuses: the stream's buffered reader goes to the
// next request. The next requests on the connection get their own bodies.
func TestRequestBodyReadAfterHandler(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		left := make(chan io.Reader, 1) // a body whose handler returned
		reading := make(chan struct{})  // the left goroutine's Read has begun
		readDone := make(chan error, 1) // what that Read returned
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/leave":
				left <- r.Body
			case "/reading":
				go func() {
					close(reading)
					_, err := r.Body.Read(make([]byte, 16))
					readDone <- err
				}()
				<-reading
				// Virtual time passes only once every goroutine of the
				// bubble is blocked: the Read waits for body data now.
				time.Sleep(10 * time.Millisecond)
			default:
				b, err := io.ReadAll(r.Body)
				fmt.Fprintf(w, "%s %v", b, err)
				return
			}
			io.WriteString(w, "answered before the body")
		})}
		addr, clientTLS := simServe(t, n, s)
		tr := simTransport(t, n, clientTLS)
		post := func(path string, body io.Reader) string {
			t.Helper()
			return roundTripString(t, tr, http.MethodPost, localhostURL(t, addr, path), body)
		}
		// openBody is a body that stays open, its first bytes sent when
		// head is not empty.
		openBody := func(head string) io.Reader {
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.Close() })
			if head != "" {
				go func() { _, _ = io.WriteString(pw, head) }()
			}
			return pr
		}

		if got := post("/leave", openBody("head of a longer body")); got != "answered before the body" {
			t.Fatalf("/leave answered %q", got)
		}
		body := <-left
		if _, err := body.Read(make([]byte, 16)); !errors.Is(err, errBodyAfterHandler) {
			t.Errorf("a Read begun after the handler returned: %v, want %v", err, errBodyAfterHandler)
		}
		if got := post("/echo", strings.NewReader("second")); got != "second <nil>" {
			t.Errorf("the next request's handler read %q", got)
		}

		if got := post("/reading", openBody("")); got != "answered before the body" {
			t.Fatalf("/reading answered %q", got)
		}
		if err := <-readDone; err == nil {
			t.Error("a Read under way when the handler returned ended without an error")
		}
		if got := post("/echo", strings.NewReader("third")); got != "third <nil>" {
			t.Errorf("the next request's handler read %q", got)
		}
	})
}

// TestResponseWriterAfterHandler: a goroutine the handler left behind that
// still uses the ResponseWriter (a ticker that flushes, an interim
// response sent late) gets errors, never a panic, and the writer's pooled
// buffers, already another response's, are left alone.
func TestResponseWriterAfterHandler(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		left := make(chan http.ResponseWriter, 1)
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/leave" {
				left <- w
			}
			io.WriteString(w, "answer "+r.URL.Path)
		})}
		addr, clientTLS := simServe(t, n, s)
		tr := simTransport(t, n, clientTLS)
		get := func(path string) string {
			t.Helper()
			return roundTripString(t, tr, http.MethodGet, localhostURL(t, addr, path), nil)
		}
		if got := get("/leave"); got != "answer /leave" {
			t.Fatalf("/leave answered %q", got)
		}
		w := <-left
		if _, err := io.WriteString(w, "late"); !errors.Is(err, errResponseAfterHandler) {
			t.Errorf("Write after the handler returned: %v, want %v", err, errResponseAfterHandler)
		}
		if err := http.NewResponseController(w).Flush(); !errors.Is(err, errResponseAfterHandler) {
			t.Errorf("Flush after the handler returned: %v, want %v", err, errResponseAfterHandler)
		}
		w.(http.Flusher).Flush()
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
		if _, err := w.(HTTPStreamer).HTTPStream(); !errors.Is(err, errResponseAfterHandler) {
			t.Errorf("HTTPStream after the handler returned: %v, want %v", err, errResponseAfterHandler)
		}
		if got := get("/next"); got != "answer /next" {
			t.Errorf("the next request got %q", got)
		}
	})
}

// roundTripString sends one request with tr and returns the response
// body; any error fails the test.
func roundTripString(t *testing.T, tr *Transport, method, url string, body io.Reader) string {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return string(b)
}
