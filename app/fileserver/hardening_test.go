package fileserver

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hardeningTree is traversalTree (links out of the root) plus dotfiles,
// a .well-known file, a directory with an index and one without.
func hardeningTree(t *testing.T) string {
	root := traversalTree(t)
	files := map[string]string{
		".env":                     "SECRET=dotfile",
		".git/config":              "[core]",
		"sub/index.html":           "<p>sub</p>",
		"sub/.hidden":              "hidden",
		".well-known/security.txt": "Contact: mailto:sec@example.org",
		".well-known/.x":           "hidden below .well-known",
		"plain/a.txt":              "a",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mtime := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "inside.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return root
}

// protocolClients returns an HTTPS HTTP/1.1 and HTTP/2 client, our HTTP/3
// client and quic-go's, all trusting ts and following no redirects.
func protocolClients(t *testing.T, ts *testServer) map[string]*http.Client {
	h2, h1 := ts.clients(t)
	ours := ts.h3Transport()
	theirs := ts.quicGoH3Transport()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	cs := map[string]*http.Client{"h1": h1, "h2": h2, "h3": {Transport: ours}, "h3-quic-go": {Transport: theirs}}
	for _, c := range cs {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return cs
}

type pathCase struct {
	method, path string
	status       int
	body         string // "" checks nothing; for HEAD the body must be empty anyway
}

func checkCases(t *testing.T, c *http.Client, base string, cases []pathCase) {
	t.Helper()
	for _, tc := range cases {
		resp, body := get(t, c, tc.method, base+tc.path)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d (body %.60q)", tc.method, tc.path, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.body != "" && !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: body %.80q lacks %q", tc.method, tc.path, body, tc.body)
		}
		if tc.method == "HEAD" && body != "" {
			t.Errorf("HEAD %s: body %.60q", tc.path, body)
		}
		if tc.status == http.StatusMethodNotAllowed || tc.method == "OPTIONS" {
			if allow := resp.Header.Get("Allow"); allow != allowedMethods {
				t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, allow, allowedMethods)
			}
		}
		if strings.Contains(body, secretMarker) {
			t.Errorf("%s %s: the secret outside the root leaked", tc.method, tc.path)
		}
	}
}

// TestFileServerDefaults: with the default configuration every protocol
// (HTTPS HTTP/1.1 and HTTP/2, HTTP/3 with our client and quic-go's) gets
// the same answers: GET and HEAD only, no dotfiles, no listings, 404 for
// links out of the root, 400/404 for names no file can have.
func TestFileServerDefaults(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Root = hardeningTree(t) })
	longName := strings.Repeat("n", maxNameLen+1)
	longPath := strings.Repeat("d/", maxPathLen/2+1)
	cases := []pathCase{
		{"GET", "inside.txt", 200, "inside"},
		{"HEAD", "inside.txt", 200, ""},
		{"OPTIONS", "inside.txt", 204, ""},
		{"OPTIONS", "", 204, ""},
		{"POST", "inside.txt", 405, ""},
		{"PUT", "new.txt", 405, ""},
		{"DELETE", "inside.txt", 405, ""},
		{"PATCH", "inside.txt", 405, ""},
		{"TRACE", "inside.txt", 405, ""},
		{"BREW", "", 405, ""},
		{"POST", ".well-known/turboretry/whoami", 405, ""},
		{"GET", ".env", 404, ""},
		{"HEAD", ".env", 404, ""},
		{"GET", ".git/config", 404, ""},
		{"GET", ".git/", 404, ""},
		{"GET", "sub/.hidden", 404, ""},
		{"GET", "sub/%2ehidden", 404, ""},
		{"GET", "sub/../.env", 307, ""}, // ServeMux cleans the path first
		{"GET", ".env/", 404, ""},
		{"GET", ".well-known/security.txt", 200, "Contact"},
		{"GET", ".well-known/.x", 404, ""},
		{"GET", "", 404, ""},               // no index.html, no listing
		{"GET", "plain/", 404, ""},         // the same
		{"GET", "plain", 404, ""},          // and no redirect that tells it exists
		{"GET", "plain/a.txt", 200, "a"},   // its files are served
		{"GET", "sub/", 200, "<p>sub</p>"}, // an index is served
		{"GET", "sub", 301, ""},            // with the usual redirect
		{"GET", "escape.txt", 404, ""},     // relative link out of the root
		{"GET", "up/outside.txt", 404, ""}, // link to the parent
		{"GET", "up/", 404, ""},            // the parent itself
		{"GET", "sub/abs.txt", 404, ""},    // absolute link out
		{"GET", "a%00b", 400, ""},          // NUL
		{"GET", "%ff%fe", 400, ""},         // not UTF-8
		{"GET", longName, 404, ""},         // no name is that long
		{"GET", longPath, 404, ""},         // nor a path
		{"GET", "inside.txt/x", 404, ""},   // a file used as a directory
		{"GET", "missing/deeper.txt", 404, ""},
	}
	for name, c := range protocolClients(t, ts) {
		t.Run(name, func(t *testing.T) {
			checkCases(t, c, ts.URL(), cases)
			checkConditionals(t, c, ts.URL()+"inside.txt")
		})
	}
}

// checkConditionals: Range, If-Modified-Since and If-None-Match still work
// behind the hardening; HEAD has the length but no body.
func checkConditionals(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, body := get(t, c, "GET", url, "Range", "bytes=1-3")
	if resp.StatusCode != http.StatusPartialContent || body != "nsi" || resp.Header.Get("Content-Range") != "bytes 1-3/6" {
		t.Errorf("Range: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Range"))
	}
	lm := resp.Header.Get("Last-Modified")
	if resp, body = get(t, c, "GET", url, "If-Modified-Since", lm); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-Modified-Since %s: %d %q", lm, resp.StatusCode, body)
	}
	if resp, _ = get(t, c, "GET", url, "If-Modified-Since", "Sat, 01 Mar 2025 11:00:00 GMT"); resp.StatusCode != 200 {
		t.Errorf("older If-Modified-Since: %d", resp.StatusCode)
	}
	etag := resp.Header.Get("ETag")
	if resp, _ = get(t, c, "GET", url, "If-None-Match", etag); etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %q: %d", etag, resp.StatusCode)
	}
	if resp, body = get(t, c, "HEAD", url); resp.StatusCode != 200 || body != "" || resp.ContentLength != 6 {
		t.Errorf("HEAD: %d, length %d, body %q", resp.StatusCode, resp.ContentLength, body)
	}
}

// TestFileServerDotfilesAndListings: --dotfiles and --list-dirs turn the
// two off-by-default features on, still over every protocol; links out of
// the root stay 404.
func TestFileServerDotfilesAndListings(t *testing.T) {
	root := hardeningTree(t)
	listOnly := startServer(t, func(c *Config) { c.Root = root; c.ListDirs = true })
	both := startServer(t, func(c *Config) { c.Root = root; c.ListDirs = true; c.Dotfiles = true })
	for name, c := range protocolClients(t, listOnly) {
		t.Run("list-dirs/"+name, func(t *testing.T) {
			checkCases(t, c, listOnly.URL(), []pathCase{
				{"GET", "", 200, "inside.txt"},
				{"GET", "plain/", 200, "a.txt"},
				{"GET", "plain", 301, ""},
				{"GET", ".env", 404, ""},
				{"GET", ".git/", 404, ""},
			})
			for _, p := range []string{"", "sub/"} {
				_, body := get(t, c, "GET", listOnly.URL()+p)
				if strings.Contains(body, ".env") || strings.Contains(body, ".git") || strings.Contains(body, ".hidden") {
					t.Errorf("listing of /%s shows a dotfile: %q", p, body)
				}
			}
		})
	}
	for name, c := range protocolClients(t, both) {
		t.Run("dotfiles/"+name, func(t *testing.T) {
			checkCases(t, c, both.URL(), []pathCase{
				{"GET", "", 200, ".env"},
				{"GET", ".env", 200, "SECRET=dotfile"},
				{"GET", ".git/config", 200, "[core]"},
				{"GET", ".git/", 200, "config"},
				{"GET", "sub/.hidden", 200, "hidden"},
				{"GET", ".well-known/.x", 200, "hidden below"},
				{"GET", "escape.txt", 404, ""},
				{"GET", "up/", 404, ""},
				{"POST", ".env", 405, ""},
			})
		})
	}
}

func TestHiddenNames(t *testing.T) {
	for name, want := range map[string]bool{
		".": false, "a": false, "a/b.c": false, ".well-known": false, ".well-known/x": false,
		".well-known/.x": true, "a/.well-known": true, ".env": true, "a/.b/c": true, "a/b/.c": true, "..": true,
	} {
		if got := hidden(name); got != want {
			t.Errorf("hidden(%q) = %v, want %v", name, got, want)
		}
	}
}
