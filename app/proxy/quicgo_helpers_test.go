package proxy

import (
	"crypto/tls"
	"net/http"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// quicGoTransport is quic-go's HTTP/3 client, closed when the test ends.
func quicGoTransport(t *testing.T, tlsConf *tls.Config) http.RoundTripper {
	tr := &quicgohttp3.Transport{TLSClientConfig: tlsConf, DisableCompression: true,
		QUICConfig: &quicgo.Config{HandshakeIdleTimeout: clientHandshakeTimeout}}
	t.Cleanup(func() { tr.Close() })
	return tr
}
