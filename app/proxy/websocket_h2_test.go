package proxy

//lint:file-ignore SA1019 x/net/http2's Transport is deprecated for net/http's, whose client refuses the :protocol field an extended CONNECT needs

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// rerunEnv marks a child test binary started by rerunWithGODEBUG.
const rerunEnv = "PROXY_TEST_RERUN"

// rerunWithGODEBUG runs t again in a child process with the GODEBUG
// setting added: net/http reads some of them (http2xconnect) only at
// start. It fails t when the child's run of t does not pass.
func rerunWithGODEBUG(t *testing.T, setting string) {
	t.Helper()
	if os.Getenv(rerunEnv) == "1" {
		t.Fatalf("GODEBUG=%s did not reach the child", setting)
	}
	godebug := setting
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + setting
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG="+godebug, rerunEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("in a child with GODEBUG=%s: %v\n%s", godebug, err, out)
	}
}

// TestWebSocketOverHTTP2 (RFC 8441): an HTTP/2 client's extended CONNECT
// (:protocol websocket) on the TCP side is bridged to the upstream's
// HTTP/1.1 WebSocket as an HTTP/3 one is. net/http's server accepts
// extended CONNECT only with GODEBUG=http2xconnect=1, so the test runs in
// a child process with it; net/http's client refuses the :protocol field,
// so the client is golang.org/x/net/http2's Transport.
func TestWebSocketOverHTTP2(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), "http2xconnect=1") {
		rerunWithGODEBUG(t, "http2xconnect=1")
		return
	}
	checkNoLeak(t)
	up, ended := startWebSocketUpstream(t)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}
	defer tr.CloseIdleConnections()
	u, _ := url.Parse(f.URL())
	u.Path = "/echo"
	pr, pw := io.Pipe()
	defer pw.Close()
	rsp, err := tr.RoundTrip(&http.Request{Method: http.MethodConnect, URL: u, Host: u.Host, Body: pr,
		Header: http.Header{":protocol": {"websocket"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Protocol": {"echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK || rsp.ProtoMajor != 2 {
		t.Fatalf("%s %d, want HTTP/2 200", rsp.Proto, rsp.StatusCode)
	}
	checkWebSocketEcho(t, f, rsp, pw, ended, "HTTP/2 client (RFC 8441", "hello", "over h2")
	eventually(t, "no WebSocket open", func() bool { return f.metric(t, "turboretry_proxy_websockets_open", nil) == 0 })
}
