package http3

import (
	"crypto/tls"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/quic"
)

// testCert returns a server TLS config for localhost and a client
// config that trusts it.
func testCert(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	server = &tls.Config{Certificates: []tls.Certificate{testcert.Certificate(t)}}
	client = &tls.Config{RootCAs: testcert.Pool(t), ServerName: "localhost", NextProtos: []string{NextProtoH3}}
	return server, client
}

// startServer runs our Server with h on a loopback socket, after opts
// changed it, and returns it with its address and a client TLS config. The server is closed at the
// end of the test.
func startServer(t testing.TB, h http.Handler, opts ...func(*Server)) (*Server, string, *tls.Config) {
	t.Helper()
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, TLSConfig: serverTLS, QUICConfig: &quic.Config{MaxIncomingStreams: 200}}
	for _, o := range opts {
		o(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(pc) }()
	for { // until Serve registered its listener, so SetQUICHeaders knows the port
		s.mu.Lock()
		n := len(s.listeners)
		s.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		pc.Close()
	})
	return s, pc.LocalAddr().String(), clientTLS
}

// checkGoroutines fails the test when goroutines of this package or the
// QUIC transport are still running once the test's servers and clients
// are closed. It waits up to 30 s for them to go: a connection its peer
// closed stays three PTOs (RFC 9000 section 10.2), and so does the
// Transport of a closed ListenAddr listener serving it, and RTT samples
// taken on a loaded machine can make that several seconds.
func checkGoroutines(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		var left []string
		for range 1500 {
			left = left[:0]
			buf := make([]byte, 1<<20)
			for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "checkGoroutines") {
					continue
				}
				if strings.Contains(g, "turboretry/http3.") || strings.Contains(g, "turboretry/quic.") {
					left = append(left, g)
				}
			}
			if len(left) == 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("%d goroutines left running:\n%s", len(left), strings.Join(left, "\n\n"))
	})
}
