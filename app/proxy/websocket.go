package proxy

import (
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // RFC 6455's Sec-WebSocket-Accept is defined with SHA-1
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
)

// WebSockets over HTTP/3 (RFC 9220) and HTTP/2 (RFC 8441) arrive as an
// extended CONNECT with :protocol websocket: the stream itself carries the
// WebSocket frames, and the handshake has no key and no accept. The
// upstream speaks HTTP/1.1 (RFC 6455): the proxy makes the Upgrade
// handshake with it as a WebSocket client (its own key, the upstream's
// accept checked), answers the client 200, and copies the bytes both ways
// unchanged; frames, subprotocols and extensions stay between the client
// and the upstream. HTTP/1.1 clients' Upgrade requests are ReverseProxy's.

// isWebSocketConnect reports whether r is an extended CONNECT for a
// WebSocket: our HTTP/3 server (as quic-go's) puts :protocol in r.Proto,
// net/http's HTTP/2 server (with GODEBUG=http2xconnect=1) in a
// ":protocol" field.
func isWebSocketConnect(r *http.Request) bool {
	return r.Method == http.MethodConnect &&
		(strings.EqualFold(r.Proto, "websocket") || strings.EqualFold(r.Header.Get(":protocol"), "websocket"))
}

// webSocketGUID is RFC 6455's constant for Sec-WebSocket-Accept.
const webSocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// webSocketAccept is the Sec-WebSocket-Accept for key (RFC 6455 section 4.2.2).
func webSocketAccept(key string) string {
	h := sha1.Sum([]byte(key + webSocketGUID)) //nolint:gosec // defined so
	return base64.StdEncoding.EncodeToString(h[:])
}

// errNoWebSocketUpgrade is the cause of a 502 when the upstream answered
// a WebSocket handshake with a 2xx, or with a 101 that is not a valid
// WebSocket handshake.
var errNoWebSocketUpgrade = errors.New("proxy: upstream's 101 is not a WebSocket handshake for our key")

// serveWebSocket bridges an extended CONNECT to an HTTP/1.1 Upgrade.
func (pp *poolProxy) serveWebSocket(w http.ResponseWriter, r *http.Request, ex *exchange) {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])

	ctx := context.WithValue(r.Context(), exchangeKey{}, ex)
	out := r.Clone(ctx)
	out.Method = http.MethodGet
	out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/1.1", 1, 1
	out.Body, out.ContentLength, out.Trailer = nil, 0, nil
	out.RequestURI = ""
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	out.URL = &u
	removeHopFields(out.Header)
	delete(out.Header, ":protocol")
	for _, k := range [...]string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Sec-Websocket-Key", "Sec-Websocket-Accept"} {
		delete(out.Header, k)
	}
	pp.rewrite(&httputil.ProxyRequest{In: r, Out: out})
	out.Header.Set("Connection", "Upgrade")
	out.Header.Set("Upgrade", "websocket")
	out.Header.Set("Sec-WebSocket-Key", key)
	if out.Header.Get("Sec-WebSocket-Version") == "" {
		out.Header.Set("Sec-WebSocket-Version", "13")
	}

	resp, err := pp.RoundTrip(out)
	if err != nil {
		pp.fail(w, out, err)
		return
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// The upstream answered as to a plain GET: passed on, the 2xx
		// would tell the client that its WebSocket is open.
		resp.Body.Close()
		ex.kind = kindBroken
		ex.up.m.errors.WithLabelValues(kindBroken).Inc()
		pp.fail(w, out, errNoWebSocketUpgrade)
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// A refusal (403, 404, 426...): passed on as any response.
		defer resp.Body.Close()
		pp.copyHeader(w, resp)
		w.WriteHeader(resp.StatusCode)
		buf := copyBuffers.Get()
		_, _ = io.CopyBuffer(w, resp.Body, buf)
		copyBuffers.Put(buf)
		return
	}
	upConn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") ||
		resp.Header.Get("Sec-WebSocket-Accept") != webSocketAccept(key) {
		resp.Body.Close()
		ex.kind = kindBroken
		ex.up.m.errors.WithLabelValues(kindBroken).Inc()
		pp.fail(w, out, errNoWebSocketUpgrade)
		return
	}
	defer upConn.Close()
	delete(resp.Header, "Sec-Websocket-Accept")
	pp.copyHeader(w, resp)
	w.WriteHeader(http.StatusOK)
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	pp.h.m.webSockets.Inc()
	defer pp.h.m.webSockets.Dec()

	// Either side's end ends both: the client's end of its stream closes
	// the upstream connection; the upstream's end stops reading the
	// client's stream and returns, which ends the response stream.
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := copyBuffers.Get()
		defer copyBuffers.Put(buf)
		_, _ = io.CopyBuffer(upConn, r.Body, buf)
		upConn.Close()
	})
	buf := copyBuffers.Get()
	_, _ = io.CopyBuffer(flushWriter{w, http.NewResponseController(w)}, upConn, buf)
	copyBuffers.Put(buf)
	upConn.Close()
	r.Body.Close()
	wg.Wait()
}

// copyHeader sets the response header from the upstream's, without its
// hop-by-hop fields, adjusted as modifyResponse adjusts ReverseProxy's.
func (pp *poolProxy) copyHeader(w http.ResponseWriter, resp *http.Response) {
	removeHopFields(resp.Header)
	_ = pp.modifyResponse(resp)
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
}

// flushWriter flushes after every write: WebSocket messages pass at once.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// hopFields are the hop-by-hop fields of RFC 9110 section 7.6.1 (and the
// obsolete ones ReverseProxy also removes).
var hopFields = [...]string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopFields removes the hop-by-hop fields from h, including those
// Connection names.
func removeHopFields(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				delete(h, http.CanonicalHeaderKey(name))
			}
		}
	}
	for _, k := range hopFields {
		delete(h, k)
	}
}
