package http3

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/quic"
)

// TestConnContextOutsideServerLock: Server.ConnContext runs without the
// Server's lock, so it may call the Server's methods and the connection's
// (SetQUICHeaders took that lock: the accept loop hung).
func TestConnContextOutsideServerLock(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		var calls atomic.Int64
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "ok")
		})}
		s.ConnContext = func(ctx context.Context, c *quic.Conn) context.Context {
			calls.Add(1)
			_ = c.ConnectionState()
			if err := s.SetQUICHeaders(http.Header{}); err != nil {
				t.Errorf("SetQUICHeaders from ConnContext: %v", err)
			}
			return ctx
		}
		addr, clientTLS := simServe(t, n, s)
		tr := simTransport(t, n, clientTLS)
		req, _ := http.NewRequest(http.MethodGet, localhostURL(t, addr, "/"), nil)
		rsp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		if err != nil || string(b) != "ok" {
			t.Fatalf("body %q, %v", b, err)
		}
		if calls.Load() != 1 {
			t.Fatalf("ConnContext called %d times, want 1", calls.Load())
		}
	})
}
