package fileserver

import (
	"net/http"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// quicGoH3Transport returns quic-go's HTTP/3 client for the server, with
// the 30 s handshake timeout h3Transport gives ours (quic-go's default is
// 5 s too).
func (ts *testServer) quicGoH3Transport() *quicgohttp3.Transport {
	return &quicgohttp3.Transport{TLSClientConfig: ts.h3TLS(), QUICConfig: &quicgo.Config{HandshakeIdleTimeout: 30 * time.Second}}
}

// TestServeHTTP3WithQuicGoClient fetches the demo page with quic-go's
// HTTP/3 client.
func TestServeHTTP3WithQuicGoClient(t *testing.T) {
	ts := startServer(t, nil)
	tr := ts.quicGoH3Transport()
	defer tr.Close()
	checkHTTP3DemoPage(t, ts, &http.Client{Transport: tr})
}
