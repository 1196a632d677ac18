package http3

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// writeRandomFile writes n random bytes to dir/name and returns them.
func writeRandomFile(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestServerFilesWithOurClient(t *testing.T) {
	checkGoroutines(t)
	fileSuite(t, func(clientTLS *tls.Config) *http.Client {
		tr := &Transport{TLSClientConfig: clientTLS}
		t.Cleanup(func() { tr.Close() })
		return &http.Client{Transport: tr}
	})
}

// fileSuite serves a temporary directory with http.FileServer and checks
// downloads (by SHA-256), Range, HEAD, If-None-Match and 100 parallel
// requests on one connection with the client newClient returns.
func fileSuite(t *testing.T, newClient func(*tls.Config) *http.Client) {
	dir := t.TempDir()
	files := map[string][]byte{
		"1k.bin":  writeRandomFile(t, dir, "1k.bin", 1<<10),
		"1m.bin":  writeRandomFile(t, dir, "1m.bin", 1<<20),
		"50m.bin": writeRandomFile(t, dir, "50m.bin", 50<<20),
	}
	var served serverConns
	_, addr, clientTLS := startServer(t, http.FileServer(http.Dir(dir)), func(s *Server) {
		s.ConnContext = func(ctx context.Context, qc *quic.Conn) context.Context {
			served.add(qc)
			return ctx
		}
	})
	client := newClient(clientTLS)
	base := "https://" + addr + "/"

	for name, want := range files {
		t.Run(name, func(t *testing.T) {
			rsp, err := client.Get(base + name)
			if err != nil {
				served.logStats(t)
				t.Fatal(err)
			}
			defer rsp.Body.Close()
			if rsp.StatusCode != http.StatusOK || rsp.Proto != "HTTP/3.0" {
				t.Fatalf("status %q proto %q", rsp.Status, rsp.Proto)
			}
			h := sha256.New()
			n, err := io.Copy(h, rsp.Body)
			if err != nil {
				served.logStats(t)
				t.Fatalf("after %d bytes: %v", n, err)
			}
			if n != int64(len(want)) || !bytes.Equal(h.Sum(nil), sha256Of(want)) {
				t.Fatalf("got %d bytes with a different SHA-256, want %d", n, len(want))
			}
		})
	}

	t.Run("range", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"1m.bin", nil)
		req.Header.Set("Range", "bytes=1000-1999")
		rsp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		got, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if rsp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, files["1m.bin"][1000:2000]) {
			t.Fatalf("status %d, %d bytes", rsp.StatusCode, len(got))
		}
		if cr := rsp.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes 1000-1999/%d", 1<<20) {
			t.Fatalf("Content-Range %q", cr)
		}
	})

	t.Run("head", func(t *testing.T) {
		rsp, err := client.Head(base + "1m.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		got, _ := io.ReadAll(rsp.Body)
		if rsp.StatusCode != http.StatusOK || len(got) != 0 || rsp.ContentLength != 1<<20 {
			t.Fatalf("status %d, body %d bytes, content-length %d", rsp.StatusCode, len(got), rsp.ContentLength)
		}
	})

	t.Run("if-none-match", func(t *testing.T) {
		// http.FileServer honours If-None-Match only with an ETag, so
		// serve the file through a handler that sets one.
		etagSrv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			http.ServeContent(w, r, "1k.bin", fileModTime(t, dir, "1k.bin"), bytes.NewReader(files["1k.bin"]))
		})
		_, addr2, clientTLS2 := startServer(t, etagSrv)
		c2 := newClient(clientTLS2)
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr2+"/1k.bin", nil)
		req.Header.Set("If-None-Match", `"v1"`)
		rsp, err := c2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		got, _ := io.ReadAll(rsp.Body)
		if rsp.StatusCode != http.StatusNotModified || len(got) != 0 {
			t.Fatalf("status %d, body %d bytes", rsp.StatusCode, len(got))
		}
	})

	t.Run("100-parallel-one-connection", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for range 100 {
			wg.Go(func() {
				rsp, err := client.Get(base + "1k.bin")
				if err != nil {
					errs <- err
					return
				}
				defer rsp.Body.Close()
				got, err := io.ReadAll(rsp.Body)
				if err == nil && !bytes.Equal(got, files["1k.bin"]) {
					err = fmt.Errorf("status %d, %d bytes differ", rsp.StatusCode, len(got))
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := served.count(); n != 1 {
			t.Errorf("the client used %d connections, want 1", n)
		}
	})
}

// serverConns keeps the server's connections so that a failed download
// can log what the sender saw (RTT, window, losses).
type serverConns struct {
	mu    sync.Mutex
	conns []*quic.Conn
}

func (s *serverConns) add(qc *quic.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = append(s.conns, qc)
}

func (s *serverConns) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *serverConns) logStats(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, qc := range s.conns {
		t.Logf("server connection %d (closed: %v): %+v", i, qc.Context().Err() != nil, qc.ConnectionStats())
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func fileModTime(t *testing.T, dir, name string) (mt time.Time) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
