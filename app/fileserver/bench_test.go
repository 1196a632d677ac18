package fileserver

import (
	"log/slog"
	"net/http/httptest"
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
