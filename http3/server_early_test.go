package http3

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/quic"
)

// TestRequestIn0RTTHasHandshakeIncomplete: as with quic-go, a handler can
// tell a request that arrived in 0-RTT (replayable, RFC 8470) by
// r.TLS.HandshakeComplete being false; a request after the handshake, on
// the same connection or a full handshake's, has it true.
func TestRequestIn0RTTHasHandshakeIncomplete(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		s := &Server{
			QUICConfig: &quic.Config{Allow0RTT: true},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, strconv.FormatBool(r.TLS.HandshakeComplete))
			}),
		}
		addr, clientTLS := simServe(t, n, s)
		cache := &notifyingCache{ClientSessionCache: tls.NewLRUClientSessionCache(1), put: make(chan struct{}, 4)}
		clientTLS.ClientSessionCache = cache
		get := func(tr *Transport) string {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, localhostURL(t, addr, "/"), nil)
			rsp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if got := get(simTransportFrom(t, n, clientTLS, 4000)); got != "true" {
			t.Fatalf("full handshake: HandshakeComplete %s, want true", got)
		}
		<-cache.put
		resumed := simTransportFrom(t, n, clientTLS, 4001)
		if got := get(resumed); got != "false" {
			t.Fatalf("request in 0-RTT: HandshakeComplete %s, want false", got)
		}
		if got := get(resumed); got != "true" {
			t.Fatalf("request after the handshake: HandshakeComplete %s, want true", got)
		}
	})
}

// simTransportFrom is simTransport dialing from the given client port, so
// a test can have several clients.
func simTransportFrom(t *testing.T, n *simnet.Network, clientTLS *tls.Config, port uint16) *Transport {
	t.Helper()
	pc, err := n.Listen(netip.AddrPortFrom(simClientAddr.Addr(), port))
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
