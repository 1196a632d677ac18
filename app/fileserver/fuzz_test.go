package fileserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
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
// "..", and by symbolic links inside the root. Under the default options a
// dotfile is never served either, and no path gets a 500.
func FuzzFilePathStaysInRoot(f *testing.F) {
	for _, p := range traversalPaths {
		f.Add(p)
	}
	for _, p := range []string{"/inside.txt", "/.dot", "/sub/.dot", "/%2edot", "/a%00b", "/%ff", "/" + strings.Repeat("x", 300), "/.well-known/../.dot"} {
		f.Add(p)
	}
	root := traversalTree(f)
	const dotMarker = "DOTFILE-CONTENT"
	for _, name := range []string{".dot", "sub/.dot"} {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(dotMarker), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	strict := newContentHandler(r.FS(), false, fileOptions{})
	open := newContentHandler(r.FS(), false, fileOptions{dotfiles: true, listDirs: true})
	f.Fuzz(func(t *testing.T, p string) {
		for _, u := range []*url.URL{{Path: p}, {Path: "/" + p}, {Opaque: p}} {
			req := &http.Request{Method: "GET", URL: u, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
			if dec, err := url.PathUnescape(p); err == nil && u.Opaque != "" {
				req.URL = &url.URL{Path: dec, RawPath: p}
			}
			for i, h := range []http.Handler{strict, open} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if strings.Contains(rec.Body.String(), secretMarker) {
					t.Fatalf("path %q (url %#v) reached the secret", p, u)
				}
				if rec.Code >= 500 {
					t.Fatalf("path %q (url %#v): %d %q", p, u, rec.Code, rec.Body.String())
				}
				if i == 0 && strings.Contains(rec.Body.String(), dotMarker) {
					t.Fatalf("path %q (url %#v) served a dotfile by default", p, u)
				}
			}
		}
	})
}
