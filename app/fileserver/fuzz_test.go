package fileserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
)

// FuzzParseRetryMode: any input either parses to a mode whose String is
// the input, or fails; never a panic.
func FuzzParseRetryMode(f *testing.F) {
	for _, s := range []string{"auto", "always", "never", "", "ALWAYS", "auto\x00", "nevermore"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseRetryMode(s)
		if err != nil {
			if !strings.Contains(err.Error(), "want auto, always or never") {
				t.Fatalf("unhelpful error %q", err)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseRetryMode(%q) = %v", s, m)
		}
	})
}

// FuzzFilePathStaysInRoot feeds arbitrary request paths (decoded and raw)
// to the file handler of a root whose parent holds a secret, reachable by
// "..", and by symbolic links inside the root.
func FuzzFilePathStaysInRoot(f *testing.F) {
	for _, p := range traversalPaths {
		f.Add(p)
	}
	f.Add("/inside.txt")
	root := traversalTree(f)
	r, err := os.OpenRoot(root)
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	h := newContentHandler(r.FS(), false)
	f.Fuzz(func(t *testing.T, p string) {
		for _, u := range []*url.URL{{Path: p}, {Path: "/" + p}, {Opaque: p}} {
			req := &http.Request{Method: "GET", URL: u, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
			if dec, err := url.PathUnescape(p); err == nil && u.Opaque != "" {
				req.URL = &url.URL{Path: dec, RawPath: p}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if strings.Contains(rec.Body.String(), secretMarker) {
				t.Fatalf("path %q (url %#v) reached the secret", p, u)
			}
		}
	})
}
