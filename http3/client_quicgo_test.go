package http3

import (
	"crypto/tls"
	"net/http"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// startQuicGoServer runs quic-go's HTTP/3 server with h on loopback.
func startQuicGoServer(t testing.TB, h http.Handler) (string, *tls.Config) {
	t.Helper()
	return startQuicGoServerConf(t, h, nil)
}

// startQuicGoServerConf is startQuicGoServer with a QUIC configuration.
func startQuicGoServerConf(t testing.TB, h http.Handler, qconf *quicgo.Config) (string, *tls.Config) {
	t.Helper()
	return startQuicGoServerWith(t, h, func(s *quicgohttp3.Server) { s.QUICConfig = qconf })
}

func TestClientWithQuicGoServer(t *testing.T) {
	addr, clientTLS := startQuicGoServer(t, testHandler())
	clientSuite(t, addr, clientTLS)
}
