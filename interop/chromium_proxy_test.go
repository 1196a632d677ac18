package interop

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/app/proxy"
	"github.com/turboretry/turboretry/internal/testutil"
)

// proxiedPage is the upstream application's page: once loaded, its script
// opens a WebSocket to the same origin and shows what the upstream echoed.
//
// Headless Chromium dumps the DOM once the page has loaded, and a
// WebSocket's message does not hold that back (nor a --virtual-time-budget,
// which stops only while a fetch is pending: the DOM was dumped before the
// echo came back in 1 CI run). So the page has an image, /hold, that the
// app answers only once the page has shown the echo (or the error) and
// fetched /seen: the load event, and the dump, wait for it.
const proxiedPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>proxied</title></head>
<body style="font: 32px sans-serif; background: #fed; color: #124">
<h1>Proxied by TurboRetry</h1>
<p id="ws">no echo yet</p>
<img src="/hold" alt="" width="1" height="1">
<script>
const done = (text) => { document.getElementById("ws").textContent = text; fetch("/seen"); };
const ws = new WebSocket("wss://" + location.host + "/ws");
ws.onopen = () => ws.send("ping from chromium");
ws.onmessage = (e) => { done("echo: " + e.data); ws.close(); };
ws.onerror = () => done("websocket error");
</script>
</body></html>
`

// proxiedHoldLimit bounds how long /hold waits for /seen: a page whose
// WebSocket never answers is dumped without the echo, and the test says so.
const proxiedHoldLimit = 10 * time.Second

// startProxiedApp serves proxiedPage on / and a coder/websocket echo on
// /ws over HTTP/1.1 on the loopback, until the test ends; /hold answers
// once /seen has been asked for (or after proxiedHoldLimit).
func startProxiedApp(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	seen := make(chan struct{})
	var seenOnce sync.Once
	mux.HandleFunc("/seen", func(w http.ResponseWriter, r *http.Request) {
		seenOnce.Do(func() { close(seen) })
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-seen:
		case <-r.Context().Done():
		case <-time.After(proxiedHoldLimit):
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, proxiedPage)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		// The page's origin is the front's, not this server's Host.
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		_ = c.Write(r.Context(), typ, msg)
		_, _, _ = c.Read(r.Context()) // until the page closes
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	testutil.Serve(t, func() { srv.Serve(ln) }, func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestChromiumThroughProxyOverHTTP3 has headless Chromium load a page of
// an application behind `serve --upstream` with QUIC forced for the
// front's origin: the page comes over HTTP/3 through the proxy (the
// access log says so) and its WebSocket, opened by the page's script,
// echoes through the proxy too (over whichever protocol Chromium picks
// for WebSockets; the log names it).
func TestChromiumThroughProxyOverHTTP3(t *testing.T) {
	chromium := findPeer(t, "chromium")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	app := startProxiedApp(t)
	srv, err := StartServer(ctx, fileserver.Config{StateDir: t.TempDir(), Handler: proxy.NewForSite(proxy.Config{Upstreams: []string{app}})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	shot := filepath.Join(t.TempDir(), "chromium-proxy-http3.png")
	// The page's /hold image keeps it loading until its WebSocket has echoed.
	p := startPeer(ctx, t, chromium, chromiumOverQUIC(t, srv, shot)...)
	if err := p.wait(ctx); err != nil {
		p.logTail(t, 30)
		t.Fatalf("chromium: %v", err)
	}
	out := p.output(t)
	if !strings.Contains(out, "<h1>Proxied by TurboRetry</h1>") {
		t.Errorf("chromium's DOM dump lacks the proxied page's heading: it did not load the page")
	}
	if !strings.Contains(out, "echo: ping from chromium") {
		t.Errorf("chromium's DOM dump lacks the WebSocket's echo")
	}
	checkScreenshot(t, shot)

	recs, err := srv.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var page, ws []string
	h3 := false
	for _, r := range recs {
		switch r.Path {
		case "/":
			page = append(page, fmt.Sprintf("%s %d", r.Protocol, r.Status))
			if r.Protocol == "HTTP/3.0" && r.Status == http.StatusOK {
				h3 = true
			}
		case "/ws":
			ws = append(ws, fmt.Sprintf("%s %s %d", r.Method, r.Protocol, r.Status))
		}
	}
	t.Logf("requests for /: %q; for /ws: %q", page, ws)
	if !h3 {
		t.Errorf("no request for / over HTTP/3.0 with status 200")
	}
	if t.Failed() {
		p.logTail(t, 30)
		t.Logf("server log:\n%s", srv.Log())
	}
}
