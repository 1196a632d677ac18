package http3

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestResponseSniffsContentType: a handler that sets no Content-Type gets
// the one net/http would sniff from the body's first bytes, whichever way
// the body reaches the stream: held back whole (small), one Write larger
// than what is held back (the header then leaves with the first DATA
// frame), a small Write and then a large one (sniffed from both), and
// io.Copy (ReadFrom). A Content-Encoding or a Content-Type of the
// handler's own stops it.
func TestResponseSniffsContentType(t *testing.T) {
	checkGoroutines(t)
	page := []byte("<!DOCTYPE html><html><body>" + strings.Repeat("x", 32<<10) + "</body></html>")
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Write(page[:40])
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		w.Write(page)
	})
	mux.HandleFunc("/split", func(w http.ResponseWriter, r *http.Request) {
		w.Write(page[:5]) // "<!DOC": too short to tell alone
		w.Write(page[5:])
	})
	mux.HandleFunc("/copy", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, struct{ io.Reader }{bytes.NewReader(page)}) // not a *bytes.Reader: ReadFrom reads it
	})
	mux.HandleFunc("/encoded", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "identity")
		w.Write(page)
	})
	mux.HandleFunc("/own", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-test")
		w.Write(page)
	})
	_, addr, clientTLS := startServer(t, mux)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	for path, want := range map[string]string{
		"/small":   "text/html; charset=utf-8",
		"/large":   "text/html; charset=utf-8",
		"/split":   "text/html; charset=utf-8",
		"/copy":    "text/html; charset=utf-8",
		"/encoded": "",
		"/own":     "application/x-test",
	} {
		rsp, err := c.Get("https://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		if err != nil || (path != "/small" && !bytes.Equal(b, page)) {
			t.Errorf("%s: %d bytes, %v", path, len(b), err)
		}
		if got := rsp.Header.Get("Content-Type"); got != want {
			t.Errorf("%s: Content-Type %q, want %q", path, got, want)
		}
	}
}
