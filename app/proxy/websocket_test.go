package proxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startWebSocketUpstream serves a coder/websocket echo on /echo (with
// subprotocol "echo") and, on /bye, one message then a normal close.
// ended receives one value per WebSocket handler that returned.
func startWebSocketUpstream(t *testing.T) (string, chan struct{}) {
	t.Helper()
	ended := make(chan struct{}, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"echo"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, msg); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "not a WebSocket")
	})
	mux.HandleFunc("/bye", func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		_ = c.Write(r.Context(), websocket.MessageText, []byte("bye"))
		_ = c.Close(websocket.StatusNormalClosure, "done")
	})
	return startUpstream(t, mux), ended
}

// WebSocket frames (RFC 6455 section 5.2), for the HTTP/3 client, which
// has no WebSocket library: short frames only.
const (
	opText  = 0x1
	opClose = 0x8
)

// writeClientFrame writes one final, masked frame (clients mask).
func writeClientFrame(w io.Writer, op byte, payload []byte) error {
	if len(payload) > 125 {
		panic("short frames only")
	}
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	b := []byte{0x80 | op, 0x80 | byte(len(payload))}
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	_, err := w.Write(b)
	return err
}

// readServerFrame reads one unmasked frame.
func readServerFrame(r io.Reader) (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 != 0 {
		return 0, nil, errors.New("masked frame from the server")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[0] & 0x0f, payload, err
}

// dialH3WebSocket opens a WebSocket over HTTP/3 (RFC 9220) to path: an
// extended CONNECT whose request body and response body are the two
// directions of the WebSocket.
func dialH3WebSocket(t *testing.T, f *front, path string, header http.Header) (*http.Response, *io.PipeWriter) {
	t.Helper()
	tr := ourH3Transport(t, &tls.Config{RootCAs: f.pool})
	u, _ := url.Parse(f.URL())
	u.Path = path
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	if header == nil {
		header = http.Header{}
	}
	header.Set("Sec-WebSocket-Version", "13")
	rsp, err := tr.RoundTrip(&http.Request{Method: http.MethodConnect, Proto: "websocket", URL: u, Host: u.Host, Header: header, Body: pr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rsp.Body.Close() })
	return rsp, pw
}

// TestWebSocketOverHTTP3 (RFC 9220): an HTTP/3 client's extended CONNECT
// is bridged to the upstream's HTTP/1.1 WebSocket (coder/websocket):
// messages echo both ways, the subprotocol is negotiated end to end, and
// either side's end closes the other.
func TestWebSocketOverHTTP3(t *testing.T) {
	checkNoLeak(t)
	up, ended := startWebSocketUpstream(t)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)

	t.Run("echo, client ends", func(t *testing.T) {
		rsp, pw := dialH3WebSocket(t, f, "/echo", http.Header{"Sec-Websocket-Protocol": {"echo"}})
		if rsp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", rsp.StatusCode)
		}
		checkWebSocketEcho(t, f, rsp, pw, ended, "HTTP/3 client (RFC 9220", "hello", "over h3")
	})

	t.Run("upstream ends", func(t *testing.T) {
		rsp, pw := dialH3WebSocket(t, f, "/bye", nil)
		if rsp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", rsp.StatusCode)
		}
		if op, got, err := readServerFrame(rsp.Body); err != nil || op != opText || string(got) != "bye" {
			t.Fatalf("first frame: op %d %q %v", op, got, err)
		}
		op, got, err := readServerFrame(rsp.Body)
		if err != nil || op != opClose || binary.BigEndian.Uint16(got) != uint16(websocket.StatusNormalClosure) {
			t.Fatalf("close frame: op %d %q %v", op, got, err)
		}
		// The closing handshake: coder/websocket closes its connection
		// once it has our close frame. Our stream stays open: the
		// upstream's end, not ours, must end the response.
		if err := writeClientFrame(pw, opClose, got); err != nil {
			t.Fatal(err)
		}
		<-ended
		if rest, err := io.ReadAll(rsp.Body); err != nil || len(rest) != 0 {
			t.Fatalf("after the upstream's end: %q %v", rest, err)
		}
	})

	t.Run("refused upgrade passes on", func(t *testing.T) {
		rsp, _ := dialH3WebSocket(t, f, "/nowhere", nil)
		if rsp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d, want the upstream's 404", rsp.StatusCode)
		}
	})

	t.Run("no upgrade is a bad gateway", func(t *testing.T) {
		// A 2xx would tell the client its WebSocket is open.
		rsp, _ := dialH3WebSocket(t, f, "/plain", nil)
		if rsp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502 for an upstream that answered 200 without upgrading", rsp.StatusCode)
		}
	})
	eventually(t, "no WebSocket open", func() bool { return f.metric(t, "turboretry_proxy_websockets_open", nil) == 0 })
}

// TestWebSocketOverHTTP1 keeps net/http's way on the TCP side: an
// HTTP/1.1 client's Upgrade passes through ReverseProxy (coder/websocket
// at both ends).
func TestWebSocketOverHTTP1(t *testing.T) {
	checkNoLeak(t)
	up, ended := startWebSocketUpstream(t)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
	defer cancel()
	u, _ := url.Parse(f.URL())
	u.Scheme, u.Path = "wss", "/echo"
	c, rsp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: f.client(t, clientH1), Subprotocols: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if rsp.Header.Get("Sec-WebSocket-Protocol") != "echo" {
		t.Errorf("subprotocol %q", rsp.Header.Get("Sec-WebSocket-Protocol"))
	}
	for _, msg := range []string{"hello", "over h1"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageText || string(got) != msg {
			t.Fatalf("echo: %v %q %v", typ, got, err)
		}
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	<-ended
}

// checkWebSocketEcho checks an extended-CONNECT WebSocket through f to
// startWebSocketUpstream's /echo (rsp, and pw its request body): the
// subprotocol, no Sec-WebSocket-Accept (who names the client and its RFC
// for the message), msgs echoed, one WebSocket counted open. Then the
// client ends its stream without a close frame: the upstream's connection
// closes, its handler ends (ended), and so does the response stream.
func checkWebSocketEcho(t *testing.T, f *front, rsp *http.Response, pw *io.PipeWriter, ended <-chan struct{}, who string, msgs ...string) {
	t.Helper()
	if got := rsp.Header.Get("Sec-WebSocket-Protocol"); got != "echo" {
		t.Errorf("subprotocol %q, want echo", got)
	}
	if got := rsp.Header.Get("Sec-WebSocket-Accept"); got != "" {
		t.Errorf("Sec-WebSocket-Accept %q reached the %s has none)", got, who)
	}
	for _, msg := range msgs {
		if err := writeClientFrame(pw, opText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		op, got, err := readServerFrame(rsp.Body)
		if err != nil || op != opText || string(got) != msg {
			t.Fatalf("echo: op %d %q %v, want text %q", op, got, err, msg)
		}
	}
	if got := f.metric(t, "turboretry_proxy_websockets_open", nil); got != 1 {
		t.Errorf("websockets open: %v, want 1", got)
	}
	pw.Close()
	<-ended
	if rest, err := io.ReadAll(rsp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("after the client's end: %q %v", rest, err)
	}
}
