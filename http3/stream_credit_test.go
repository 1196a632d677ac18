package http3

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// TestServerReleasesStreamCredit runs requests one after the other
// against a server whose QUIC config admits one request stream and
// requires releasing stream credit: each completed request must give
// its credit back, or the next never gets a stream.
func TestServerReleasesStreamCredit(t *testing.T) {
	_, addr, clientTLS := startServer(t, testHandler(), func(s *Server) {
		s.QUICConfig = &quic.Config{MaxIncomingStreams: 1, RequireStreamCreditRelease: true}
	})
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
	defer cancel()
	for i := range 5 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, localhostURL(t, addr, "/hello"), nil)
		rsp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, rsp.Body)
		rsp.Body.Close()
	}
}
