package http3

import (
	"crypto/tls"
	"net/http"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// The *_quicgo_test.go files use quic-go's HTTP/3 package (test-only) as
// the independent reference peer.

// quicGoClient returns an http.Client using quic-go's HTTP/3 transport.
func quicGoClient(t testing.TB, clientTLS *tls.Config) (*http.Client, *quicgohttp3.Transport) {
	t.Helper()
	tr := &quicgohttp3.Transport{TLSClientConfig: clientTLS, QUICConfig: &quicgo.Config{MaxIncomingStreams: 200}}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr}, tr
}
