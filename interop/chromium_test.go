package interop

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/app/fileserver"
)

// screenshotWidth and screenshotHeight are the browser window size, and
// so the screenshot's.
const screenshotWidth, screenshotHeight = 1024, 768

// minScreenshotColors is how many distinct colours a screenshot of the
// rendered demo page has at least (text is anti-aliased, so it has
// hundreds); a blank or single-colour error page has far fewer.
const minScreenshotColors = 16

// TestChromiumLoadsDemoPageOverHTTP3 has headless Chromium load our demo
// site with QUIC forced for its origin, and proves from our access log
// that the page came over HTTP/3. The screenshot is kept in
// $TURBORETRY_ARTIFACTS when that is set.
func TestChromiumLoadsDemoPageOverHTTP3(t *testing.T) {
	chromium := findPeer(t, "chromium")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	srv, err := StartServer(ctx, fileserver.Config{StateDir: t.TempDir()}) // embedded demo site
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	shot := filepath.Join(t.TempDir(), "chromium-http3.png")
	p := startPeer(ctx, t, chromium, chromiumOverQUIC(t, srv, shot)...)
	if err := p.wait(ctx); err != nil {
		p.logTail(t, 30)
		t.Fatalf("chromium: %v", err)
	}
	out := p.output(t)
	if !strings.Contains(out, "<h1>TurboRetry</h1>") {
		t.Errorf("chromium's DOM dump lacks the demo page's heading: it did not load the page")
	}
	checkScreenshot(t, shot)

	recs, err := srv.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var protocols []string
	h3 := false
	for _, r := range recs {
		if r.Path != "/" {
			continue
		}
		protocols = append(protocols, r.Protocol)
		if r.Protocol == "HTTP/3.0" && r.Status == 200 {
			h3 = true
		}
	}
	if !h3 {
		t.Errorf("no request for / over HTTP/3.0 with status 200; protocols logged for /: %q", protocols)
	}
	if t.Failed() {
		p.logTail(t, 30)
		t.Logf("server log:\n%s", srv.Log())
	}
}

// checkScreenshot checks that path is a PNG of the window's size showing
// more than a blank page, and copies it to $TURBORETRY_ARTIFACTS when set.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("no screenshot: %v", err)
		return
	}
	if dir := os.Getenv("TURBORETRY_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("artifacts: %v", err)
		} else if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o644); err != nil {
			t.Errorf("artifacts: %v", err)
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Errorf("screenshot is not a PNG: %v", err)
		return
	}
	if b := img.Bounds(); b.Dx() != screenshotWidth || b.Dy() != screenshotHeight {
		t.Errorf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), screenshotWidth, screenshotHeight)
	}
	if n := distinctColors(img, minScreenshotColors); n < minScreenshotColors {
		t.Errorf("screenshot has %d distinct colours: the page did not render", n)
	}
}

// distinctColors counts the distinct colours of img, stopping at limit.
func distinctColors(img image.Image, limit int) int {
	seen := make(map[[4]uint32]bool)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// chromiumOverQUIC is headless Chromium's command line for loading srv's
// page with QUIC forced for its origin (no TCP first, no Alt-Svc needed),
// trusting its certificate by SPKI hash, dumping the DOM and a screenshot
// into shot; extra flags go before the URL.
func chromiumOverQUIC(t *testing.T, srv *Server, shot string, extra ...string) []string {
	args := []string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
		"--enable-quic",
		fmt.Sprintf("--origin-to-force-quic-on=127.0.0.1:%d", srv.Port()),
		"--ignore-certificate-errors-spki-list=" + srv.SPKIHash(),
		"--screenshot=" + shot, "--dump-dom",
		fmt.Sprintf("--window-size=%d,%d", screenshotWidth, screenshotHeight),
	}
	return append(append(args, extra...), srv.URL())
}
