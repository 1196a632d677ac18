package fileserver

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// statCountingFS counts the Stat calls that reach the served tree.
type statCountingFS struct {
	fs.FS
	stats atomic.Int64
}

func (c *statCountingFS) Stat(name string) (fs.FileInfo, error) {
	c.stats.Add(1)
	return fs.Stat(c.FS, name)
}

// TestFileRequestStatsOnce: a request for a regular file looks its name up
// once before FileServer opens it (the unindexed-directory check and the
// ETag share that stat), and the ETag keeps its modtime-size form.
func TestFileRequestStatsOnce(t *testing.T) {
	mtime := time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC)
	tree := &statCountingFS{FS: fstest.MapFS{
		"a.txt":          {Data: []byte("hello"), ModTime: mtime},
		"bare/x.txt":     {Data: []byte("x")},
		"sub/index.html": {Data: []byte("<p>sub</p>")},
	}}
	h := newContentHandler(tree, false, fileOptions{})

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/a.txt", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "hello" {
		t.Fatalf("GET /a.txt: %d %q", rec.Code, rec.Body.String())
	}
	if n := tree.stats.Load(); n != 1 {
		t.Errorf("GET /a.txt: %d stats of the tree, want 1", n)
	}
	if got, want := rec.Header().Get("ETag"), fmt.Sprintf(`"%x-%x"`, mtime.UnixNano(), 5); got != want {
		t.Errorf("ETag %q, want %q", got, want)
	}

	// The checks that share the stat still hold: a directory without an
	// index is 404, one with an index gets the index's ETag.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/bare/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /bare/: %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/sub/", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") == "" {
		t.Errorf("GET /sub/: %d, ETag %q", rec.Code, rec.Header().Get("ETag"))
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/missing", nil))
	if rec.Code != http.StatusNotFound || rec.Header().Get("ETag") != "" {
		t.Errorf("GET /missing: %d, ETag %q", rec.Code, rec.Header().Get("ETag"))
	}
}
