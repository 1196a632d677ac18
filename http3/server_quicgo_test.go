package http3

import (
	"crypto/tls"
	"net/http"
	"testing"
)

func TestServerFilesWithQuicGoClient(t *testing.T) {
	fileSuite(t, func(clientTLS *tls.Config) *http.Client {
		c, _ := quicGoClient(t, clientTLS)
		return c
	})
}
