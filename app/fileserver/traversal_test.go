package fileserver

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretMarker is the content of a file beside the served root; no
// response may ever contain it.
const secretMarker = "TOP-SECRET-OUTSIDE-ROOT"

// traversalTree builds base/outside.txt (the secret), base/www (the root)
// with an ordinary file, and symbolic links in the root that point out.
func traversalTree(t testing.TB) (root string) {
	base := t.TempDir()
	root = filepath.Join(base, "www")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(base, "outside.txt"), []byte(secretMarker), 0o644))
	must(os.WriteFile(filepath.Join(root, "inside.txt"), []byte("inside"), 0o644))
	must(os.Symlink("../outside.txt", filepath.Join(root, "escape.txt")))
	must(os.Symlink("..", filepath.Join(root, "up")))
	must(os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(root, "sub", "abs.txt")))
	return root
}

// traversalPaths are request targets sent verbatim on the wire.
var traversalPaths = []string{
	"/../outside.txt",
	"/../../outside.txt",
	"/%2e%2e/outside.txt",
	"/%2E%2E/outside.txt",
	"/..%2foutside.txt",
	"/%2e%2e%2foutside.txt",
	"/sub/../../outside.txt",
	"/sub/%2e%2e/%2e%2e/outside.txt",
	"//../outside.txt",
	"/..\\outside.txt",
	"/%2e%2e%5coutside.txt",
	"/./../outside.txt",
	"/escape.txt",
	"/up/outside.txt",
	"/up/",
	"/up",
	"/sub/abs.txt",
	"/inside.txt/../../outside.txt",
	"/%252e%252e/outside.txt",
	"/..;/outside.txt",
}

// rawGet sends target as the request line verbatim over TLS and returns
// the whole response.
func rawGet(t *testing.T, addr, target string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // only guards against a hang
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "unparsable response: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status + "\n" + string(body)
}

func TestPathTraversalNeverEscapesRoot(t *testing.T) {
	root := traversalTree(t)
	ts := startServer(t, func(c *Config) { c.Root = root; c.ListDirs = true; c.Dotfiles = true })
	addr := ts.Addr().String()
	// The tree is right: the inside file is served.
	if got := rawGet(t, addr, "/inside.txt"); !strings.HasPrefix(got, "200") || !strings.HasSuffix(got, "inside") {
		t.Fatalf("/inside.txt: %q", got)
	}
	for _, p := range traversalPaths {
		got := rawGet(t, addr, p)
		if strings.Contains(got, secretMarker) || strings.Contains(got, "outside.txt") && strings.HasPrefix(got, "200") {
			t.Errorf("%s escaped the root: %q", p, got)
		}
		if strings.HasPrefix(got, "500") {
			t.Errorf("%s: %q, want a 4xx", p, got)
		}
	}
	// With listings and dotfiles on (the most permissive configuration),
	// the root listing shows the links' names but following them fails.
	if got := rawGet(t, addr, "/"); !strings.Contains(got, "escape.txt") || strings.Contains(got, secretMarker) {
		t.Errorf("root listing: %q", got)
	}
}
