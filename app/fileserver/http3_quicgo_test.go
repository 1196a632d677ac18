package fileserver

import (
	"net/http"
	"testing"

	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// TestServeHTTP3WithQuicGoClient fetches the demo page with quic-go's
// HTTP/3 client. It needs golang.org/x/text in go.mod (quic-go's http3
// imports golang.org/x/net/http/httpguts), hence the build tag.
func TestServeHTTP3WithQuicGoClient(t *testing.T) {
	ts := startServer(t, nil)
	tr := &quicgohttp3.Transport{TLSClientConfig: ts.h3TLS()}
	defer tr.Close()
	checkHTTP3DemoPage(t, ts, &http.Client{Transport: tr})
}
