package http3

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/quic"
)

// Timing-dependent HTTP/3 tests run in a synctest bubble over an
// in-memory simnet network (as quic's harness does, docs/testing.md):
// timers such as Server.IdleTimeout run in virtual time, so a loaded
// machine cannot make a request arrive "late".

var (
	simServerAddr = netip.MustParseAddrPort("198.18.0.1:443")
	simClientAddr = netip.MustParseAddrPort("198.18.1.1:4000")
)

// simLink is the harness's link: 5 ms each way, nothing lost.
var simLink = simnet.LinkConfig{Delay: 5 * time.Millisecond}

// simTest runs f in a synctest bubble. The bubble's end checks that every
// goroutine f started has exited.
func simTest(t *testing.T, f func(t *testing.T, n *simnet.Network)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) { f(t, simnet.New(1, simLink)) })
}

// simServe serves s at simServerAddr on n until the test ends; s gets the
// TLS configuration of a fresh certificate, the client's of which is
// returned with the server's URL authority.
func simServe(t *testing.T, n *simnet.Network, s *Server) (authority string, clientTLS *tls.Config) {
	t.Helper()
	pc, err := n.Listen(simServerAddr)
	if err != nil {
		t.Fatal(err)
	}
	s.TLSConfig, clientTLS = testCert(t)
	done := make(chan error, 1)
	go func() { done <- s.Serve(pc) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		pc.Close()
	})
	return "localhost:" + strconv.Itoa(int(simServerAddr.Port())), clientTLS
}

// simTransport returns a Transport whose connections are dialed from
// simClientAddr to the server at simServerAddr, whatever the URL's host;
// it is closed when the test ends.
func simTransport(t *testing.T, n *simnet.Network, clientTLS *tls.Config) *Transport {
	t.Helper()
	pc, err := n.Listen(simClientAddr)
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	server := net.UDPAddrFromAddrPort(simServerAddr)
	tr := &Transport{TLSClientConfig: clientTLS, Dial: func(ctx context.Context, _ string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
		return qt.DialEarly(ctx, server, tlsConf, conf)
	}}
	t.Cleanup(func() {
		tr.Close()
		qt.Close()
		pc.Close()
	})
	return tr
}
