package http3

import (
	"crypto/tls"
	"net"
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
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &quicgohttp3.Server{Handler: h, TLSConfig: quicgohttp3.ConfigureTLSConfig(serverTLS), QUICConfig: qconf}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(pc)
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
		pc.Close()
	})
	return pc.LocalAddr().String(), clientTLS
}

func TestClientWithQuicGoServer(t *testing.T) {
	addr, clientTLS := startQuicGoServer(t, testHandler())
	clientSuite(t, addr, clientTLS)
}
