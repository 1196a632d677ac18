//go:build linux

package abuse

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// benignClients are the two HTTP/3 clients a benign user may run: quic-go's
// and ours. Each fetch uses a new Transport, so it dials a connection of
// its own and goes through whatever the server makes new clients do
// (a Retry under a flood).
var benignClients = []struct {
	name string
	new  func(*server) (http.RoundTripper, func())
}{
	{"quic-go", func(s *server) (http.RoundTripper, func()) {
		tr := &quicgohttp3.Transport{TLSClientConfig: s.clientTLS()}
		if s.clientNS != "" {
			// The transport dials on a goroutine of its own: make the
			// socket in the clients' namespace.
			tr.Dial = func(ctx context.Context, addr string, tc *tls.Config, qc *quicgo.Config) (c *quicgo.Conn, err error) {
				err = s.inClientNS(func() error { c, err = quicgo.DialAddrEarly(ctx, addr, tc, qc); return err })
				return c, err
			}
		}
		return tr, func() { tr.Close() }
	}},
	{"turboretry", func(s *server) (http.RoundTripper, func()) {
		tr := &http3.Transport{TLSClientConfig: s.clientTLS()}
		if s.clientNS != "" {
			tr.Dial = func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (c *quic.Conn, err error) {
				err = s.inClientNS(func() error { c, err = quic.DialAddrEarly(ctx, addr, tc, qc); return err })
				return c, err
			}
		}
		return tr, func() { tr.Close() }
	}},
}

// benignFetch GETs path over HTTP/3 with the named client and checks the
// status and, when want is not nil, the body.
func benignFetch(ctx context.Context, s *server, client int, path string, want []byte) error {
	c := benignClients[client]
	rt, closeRT := c.new(s)
	defer closeRT()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("%s client: GET %s: %w", c.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s client: GET %s: reading the body: %w", c.name, path, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/3.0" {
		return fmt.Errorf("%s client: GET %s: %d %s", c.name, path, resp.StatusCode, resp.Proto)
	}
	if want != nil && string(body) != string(want) {
		return fmt.Errorf("%s client: GET %s: body of %d bytes, want %d", c.name, path, len(body), len(want))
	}
	return nil
}

// benignFetches runs benignFetch with every client at once and returns a
// channel that gets each one's result.
func benignFetches(ctx context.Context, s *server, path string, want []byte) <-chan error {
	out := make(chan error, len(benignClients))
	for i := range benignClients {
		go func() { out <- benignFetch(ctx, s, i, path, want) }()
	}
	return out
}

// checkBenign waits for the results of benignFetches.
func checkBenign(t *testing.T, results <-chan error) {
	t.Helper()
	for range benignClients {
		if err := <-results; err != nil {
			t.Error("benign fetch during the attack:", err)
		}
	}
}
