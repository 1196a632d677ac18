package http3

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/internal/simnet"
)

// TestRequestWithFINOnHeadersHasNoBody: a request whose HEADERS frame
// came with the stream's FIN reaches the handler with Body http.NoBody, so
// a handler forwarding it with an http.Transport neither probes nor sends
// a body; ContentLength stays -1 without a Content-Length field, as in
// quic-go (its TestHTTPServerRequestParsing checks that). A request whose
// body is still open keeps a readable Body.
func TestRequestWithFINOnHeadersHasNoBody(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			fmt.Fprintf(w, "nobody=%t length=%d body=%q err=%v", r.Body == http.NoBody, r.ContentLength, b, err)
		})}
		addr, clientTLS := simServe(t, n, s)
		tr := simTransport(t, n, clientTLS)
		do := func(method string, body io.Reader) string {
			t.Helper()
			return roundTripString(t, tr, method, localhostURL(t, addr, "/"), body)
		}
		for _, tc := range []struct {
			name   string
			method string
			body   func() io.Reader
			want   string
		}{
			{"GET", http.MethodGet, func() io.Reader { return nil }, `nobody=true length=-1 body="" err=<nil>`},
			{"empty POST", http.MethodPost, func() io.Reader { return http.NoBody }, `nobody=true length=0 body="" err=<nil>`},
			{"POST with length", http.MethodPost, func() io.Reader { return strings.NewReader("abc") }, `nobody=false length=3 body="abc" err=<nil>`},
			{"POST streamed", http.MethodPost, func() io.Reader {
				pr, pw := io.Pipe()
				go func() { _, _ = io.WriteString(pw, "streamed"); pw.Close() }()
				return pr
			}, `nobody=false length=-1 body="streamed" err=<nil>`},
		} {
			if got := do(tc.method, tc.body()); got != tc.want {
				t.Errorf("%s: handler saw %s, want %s", tc.name, got, tc.want)
			}
		}
	})
}
