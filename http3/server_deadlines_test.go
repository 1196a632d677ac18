package http3

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// neverEnding is an endless body.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// clientKinds are the HTTP/3 clients the server tests run with: ours and
// quic-go's.
var clientKinds = []struct {
	name string
	make func(t *testing.T, clientTLS *tls.Config) *http.Client
}{
	{"ours", func(t *testing.T, clientTLS *tls.Config) *http.Client {
		tr := &Transport{TLSClientConfig: clientTLS}
		t.Cleanup(func() { tr.Close() })
		return &http.Client{Transport: tr}
	}},
	{"quic-go", func(t *testing.T, clientTLS *tls.Config) *http.Client {
		c, _ := quicGoClient(t, clientTLS)
		return c
	}},
}

// wantRemoteReset checks that reading body fails with the server's
// stream reset carrying code, as *Error{Remote: true} (ours and quic-go's
// http3.Error both print the code name).
func wantRemoteReset(t *testing.T, body io.Reader, code ErrCode) {
	t.Helper()
	_, err := io.ReadAll(body)
	if err == nil || !strings.Contains(err.Error(), code.String()) {
		t.Fatalf("body read ended with %v, want the server's %s", err, code)
	}
}

// TestHTTPDeadlines is quic-go's integration test of the same name
// (issue 15: an intermittent 10 s stall, and H3_INTERNAL_ERROR where
// quic-go resets with H3_REQUEST_CANCELLED): a handler's read deadline
// ends its body read, its write deadline ends a write blocked on flow
// control and the stream is reset with H3_REQUEST_CANCELLED; a third
// request on the same connection still completes.
func TestHTTPDeadlines(t *testing.T) {
	checkGoroutines(t)
	// Long enough that the response header leaves before the write deadline
	// resets the stream on a loaded machine (CI: race detector, parallel
	// packages); the write still blocks on flow control until it fires.
	const deadline = 500 * time.Millisecond
	readErr, writeErr := make(chan error, 1), make(chan error, 1)
	mux := http.NewServeMux()
	mux.Handle("/hello", testHandler())
	mux.HandleFunc("/read-deadline", func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(deadline)); err != nil {
			t.Error(err)
		}
		_, err := io.Copy(io.Discard, r.Body)
		readErr <- err
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/write-deadline", func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(deadline)); err != nil {
			t.Error(err)
		}
		_, err := io.Copy(w, neverEnding('a'))
		writeErr <- err
	})
	s, addr, clientTLS := startServer(t, mux)
	for _, kind := range clientKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kind.make(t, clientTLS)
			base := "https://" + addr

			rsp, err := c.Post(base+"/read-deadline", "text/plain", neverEnding('a'))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			if err != nil || string(b) != "ok" {
				t.Fatalf("read-deadline response %q, %v", b, err)
			}
			if err := <-readErr; !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("handler's body read ended with %v, want os.ErrDeadlineExceeded", err)
			}

			rsp, err = c.Get(base + "/write-deadline")
			if err != nil {
				t.Fatal(err)
			}
			// The body is not read, so the handler's write blocks.
			if err := <-writeErr; !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errWriteStalled) {
				t.Fatalf("handler's write ended with %v, want its own deadline", err)
			}
			wantRemoteReset(t, rsp.Body, ErrCodeRequestCanceled)
			rsp.Body.Close()

			rsp, err = c.Get(base + "/hello")
			if err != nil {
				t.Fatalf("request after the deadlines: %v", err)
			}
			b, err = io.ReadAll(rsp.Body)
			rsp.Body.Close()
			if err != nil || string(b) != "hello HTTP/3.0" {
				t.Fatalf("request after the deadlines: %q, %v", b, err)
			}
		})
	}
	if n := s.Stats().Refused[RefusedWriteStall]; n != 0 {
		t.Fatalf("the handler's own deadline counted as %d write stalls", n)
	}
}

// TestWriteStallTimeout: a client that does not read its response makes
// the handler's writes block on flow control; after WriteStallTimeout
// the write fails (matching os.ErrDeadlineExceeded), the stream is reset
// with H3_REQUEST_CANCELLED and the stall is counted. Other requests on
// the same connection are served meanwhile.
func TestWriteStallTimeout(t *testing.T) {
	checkGoroutines(t)
	writeErr := make(chan error, 1)
	mux := http.NewServeMux()
	mux.Handle("/hello", testHandler())
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(w, neverEnding('a'))
		writeErr <- err
	})
	s, addr, clientTLS := startServer(t, mux, func(s *Server) { s.WriteStallTimeout = 100 * time.Millisecond })
	for i, kind := range clientKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kind.make(t, clientTLS)
			rsp, err := c.Get("https://" + addr + "/endless")
			if err != nil {
				t.Fatal(err)
			}
			hello, err := c.Get("https://" + addr + "/hello")
			if err != nil {
				t.Fatalf("request beside the stalled one: %v", err)
			}
			hello.Body.Close()
			if err := <-writeErr; !errors.Is(err, errWriteStalled) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("handler's write ended with %v, want a write stall", err)
			}
			wantRemoteReset(t, rsp.Body, ErrCodeRequestCanceled)
			rsp.Body.Close()
			if n := s.Stats().Refused[RefusedWriteStall]; n != uint64(i+1) {
				t.Fatalf("write_stall counted %d times, want %d", n, i+1)
			}
		})
	}
}

func TestServerTimeoutDefaults(t *testing.T) {
	var s Server
	if s.uniStreamTimeout() != DefaultUniStreamTimeout || s.writeStallTimeout() != DefaultWriteStallTimeout {
		t.Fatalf("defaults: %v, %v", s.uniStreamTimeout(), s.writeStallTimeout())
	}
	s.UniStreamTimeout, s.WriteStallTimeout = -1, -1
	if s.uniStreamTimeout() != 0 || s.writeStallTimeout() != 0 {
		t.Fatal("negative timeouts are not disabled")
	}
	if got := s.maxConnHeaderBytes(); got != 2*http.DefaultMaxHeaderBytes {
		t.Fatalf("default MaxConnHeaderBytes %d", got)
	}
	s.MaxHeaderBytes, s.MaxConnHeaderBytes = 1000, 10
	if got := s.maxConnHeaderBytes(); got != 1000 {
		t.Fatalf("MaxConnHeaderBytes below MaxHeaderBytes: %d", got)
	}
}
