package fileserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkHandlerDemoIndex measures the full handler chain (access log to
// a discarding logger, metrics, Alt-Svc, ETag, file serving) without the
// network.
func BenchmarkHandlerDemoIndex(b *testing.B) {
	m, err := newServerMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := withAccessLog(withCommonHeaders(newContentHandler(DemoFS(), true, fileOptions{}), 4433), slog.New(slog.DiscardHandler), m)
	req := httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkAccessLogOverhead measures the middleware alone around a
// handler that writes nothing.
func BenchmarkAccessLogOverhead(b *testing.B) {
	m, err := newServerMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := withAccessLog(newContentHandler(DemoFS(), true, fileOptions{}), slog.New(slog.DiscardHandler), m)
	req := httptest.NewRequest("HEAD", WhoamiPath, nil)
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(rec, req)
	}
}

// BenchmarkHandlerFile100KB measures the full handler chain for a 100 KB
// file on disk (os.Root, as `turboretry serve --root` reads it), the
// request of `make bench-serve`'s small-file case, without the network.
func BenchmarkHandlerFile100KB(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "100KB.bin"), make([]byte, 100_000), 0o644); err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	m, err := newServerMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := withAccessLog(withCommonHeaders(newContentHandler(root.FS(), false, fileOptions{}), 4433), slog.New(slog.DiscardHandler), m)
	req := httptest.NewRequest("GET", "/100KB.bin", nil)
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		w.n = 0
		h.ServeHTTP(w, req)
		if w.n != 100_000 {
			b.Fatalf("%d bytes", w.n)
		}
	}
}

// discardWriter is a ResponseWriter that counts the body and keeps
// nothing, so a benchmark measures the handler rather than a recorder.
type discardWriter struct {
	header http.Header
	n      int
	buf    [32 << 10]byte // ReadFrom's, as the HTTP/3 writer pools one
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(int)     {}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

func (w *discardWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		n, err := r.Read(w.buf[:])
		w.n += n
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
