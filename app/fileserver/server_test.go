package fileserver

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeDemoSite(t *testing.T) {
	ts := startServer(t, nil)
	h2, h1 := ts.clients(t)
	wantAltSvc := fmt.Sprintf(`h3=":%d"; ma=86400`, ts.Addr().(*net.TCPAddr).Port)
	index, err := fs.ReadFile(DemoFS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		c     *http.Client
		proto string
	}{{"h2", h2, "HTTP/2.0"}, {"h1", h1, "HTTP/1.1"}} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.c, "GET", ts.URL())
			if resp.StatusCode != 200 || resp.Proto != tc.proto {
				t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Proto)
			}
			if body != string(index) || !strings.Contains(body, "TurboRetry") {
				t.Errorf("GET / body differs from the embedded index.html")
			}
			if got := resp.Header.Get("Alt-Svc"); got != wantAltSvc {
				t.Errorf("Alt-Svc %q, want %q", got, wantAltSvc)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag on the demo index")
			}

			resp, body = get(t, tc.c, "GET", ts.URL(), "If-None-Match", etag)
			if resp.StatusCode != http.StatusNotModified || body != "" {
				t.Errorf("If-None-Match: %d, body %q", resp.StatusCode, body)
			}
			if resp.Header.Get("Alt-Svc") != wantAltSvc {
				t.Errorf("304 lacks Alt-Svc")
			}
			resp, _ = get(t, tc.c, "GET", ts.URL(), "If-None-Match", `"other"`)
			if resp.StatusCode != 200 {
				t.Errorf("non-matching If-None-Match: %d", resp.StatusCode)
			}

			resp, body = get(t, tc.c, "GET", ts.URL(), "Range", "bytes=10-19")
			if resp.StatusCode != http.StatusPartialContent || body != string(index[10:20]) {
				t.Errorf("Range: %d %q", resp.StatusCode, body)
			}
			if want := fmt.Sprintf("bytes 10-19/%d", len(index)); resp.Header.Get("Content-Range") != want {
				t.Errorf("Content-Range %q, want %q", resp.Header.Get("Content-Range"), want)
			}

			resp, body = get(t, tc.c, "HEAD", ts.URL())
			if resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(index)) {
				t.Errorf("HEAD: %d, length %d, body %q", resp.StatusCode, resp.ContentLength, body)
			}

			resp, body = get(t, tc.c, "GET", ts.URL()+"style.css")
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || body == "" {
				t.Errorf("style.css: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}

			resp, _ = get(t, tc.c, "GET", ts.URL()+"nope")
			if resp.StatusCode != 404 || resp.Header.Get("Alt-Svc") != wantAltSvc {
				t.Errorf("missing file: %d, Alt-Svc %q", resp.StatusCode, resp.Header.Get("Alt-Svc"))
			}

			resp, body = get(t, tc.c, "GET", strings.TrimSuffix(ts.URL(), "/")+WhoamiPath)
			var me whoami
			if err := json.Unmarshal([]byte(body), &me); err != nil {
				t.Fatalf("whoami: %v: %q", err, body)
			}
			if me.Protocol != tc.proto || me.Remote == "" || me.TLSVersion != "TLS 1.3" || me.RetryValidated || me.TokenValidated || me.ZeroRTT {
				t.Errorf("whoami: %+v", me)
			}
			if resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("whoami content type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
}

func TestServeRootDirectory(t *testing.T) {
	root := t.TempDir()
	content := strings.Repeat("0123456789", 100)
	if err := os.WriteFile(filepath.Join(root, "data.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "data.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "index.html"), []byte("<p>sub index</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) { c.Root = root })
	h2, h1 := ts.clients(t)
	for _, c := range []*http.Client{h2, h1} {
		resp, body := get(t, c, "GET", ts.URL()+"data.txt")
		if resp.StatusCode != 200 || body != content {
			t.Fatalf("data.txt: %d", resp.StatusCode)
		}
		lm := resp.Header.Get("Last-Modified")
		if lm != mtime.Format(http.TimeFormat) {
			t.Errorf("Last-Modified %q", lm)
		}
		resp, body = get(t, c, "GET", ts.URL()+"data.txt", "If-Modified-Since", lm)
		if resp.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("If-Modified-Since: %d", resp.StatusCode)
		}
		resp, _ = get(t, c, "GET", ts.URL()+"data.txt", "If-Modified-Since", mtime.Add(-time.Hour).Format(http.TimeFormat))
		if resp.StatusCode != 200 {
			t.Errorf("older If-Modified-Since: %d", resp.StatusCode)
		}
		etag := resp.Header.Get("ETag")
		if resp, _ = get(t, c, "GET", ts.URL()+"data.txt", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: %d", etag, resp.StatusCode)
		}
		resp, body = get(t, c, "GET", ts.URL()+"data.txt", "Range", "bytes=-5")
		if resp.StatusCode != http.StatusPartialContent || body != "56789" {
			t.Errorf("suffix range: %d %q", resp.StatusCode, body)
		}
		// If-Range with the current ETag honours the range; a stale one
		// sends the whole file.
		resp, body = get(t, c, "GET", ts.URL()+"data.txt", "Range", "bytes=0-1", "If-Range", etag)
		if resp.StatusCode != http.StatusPartialContent || body != "01" {
			t.Errorf("If-Range current: %d %q", resp.StatusCode, body)
		}
		resp, _ = get(t, c, "GET", ts.URL()+"data.txt", "Range", "bytes=0-1", "If-Range", `"stale"`)
		if resp.StatusCode != 200 {
			t.Errorf("If-Range stale: %d", resp.StatusCode)
		}
		resp, body = get(t, c, "GET", ts.URL()+"sub/")
		if resp.StatusCode != 200 || body != "<p>sub index</p>" || resp.Header.Get("ETag") == "" {
			t.Errorf("sub/: %d %q etag %q", resp.StatusCode, body, resp.Header.Get("ETag"))
		}
		// The directory without its slash redirects, with no ETag.
		noRedirect := *c
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, _ = get(t, &noRedirect, "GET", ts.URL()+"sub")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("ETag") != "" {
			t.Errorf("sub: %d etag %q", resp.StatusCode, resp.Header.Get("ETag"))
		}
		// No index.html and no --list-dirs: not found (hardening_test.go
		// has the listing).
		if resp, _ = get(t, c, "GET", ts.URL()); resp.StatusCode != 404 {
			t.Errorf("unindexed root: %d", resp.StatusCode)
		}
	}
}

func TestParseRetryMode(t *testing.T) {
	for _, m := range []RetryMode{RetryAuto, RetryAlways, RetryNever} {
		got, err := ParseRetryMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseRetryMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Auto", "sometimes", "always "} {
		if _, err := ParseRetryMode(bad); err == nil {
			t.Errorf("ParseRetryMode(%q) succeeded", bad)
		}
	}
	if s := RetryMode(9).String(); s != "RetryMode(9)" {
		t.Errorf("String of unknown mode: %q", s)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, err := DefaultStateDir(); err != nil || d != "/x/state/turboretry" {
		t.Errorf("with XDG_STATE_HOME: %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if d, err := DefaultStateDir(); err != nil || d != "/home/u/.local/state/turboretry" {
		t.Errorf("relative XDG_STATE_HOME: %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := DefaultStateDir(); err == nil {
		t.Error("no HOME: no error")
	}
}
