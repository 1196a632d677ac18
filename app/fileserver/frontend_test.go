package fileserver

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// closingHandler is a Config.Handler's handler that counts its Close.
type closingHandler struct {
	http.Handler
	closed atomic.Int32
}

func (h *closingHandler) Close() error {
	h.closed.Add(1)
	return nil
}

// TestConfigHandler: Config.Handler's handler answers in place of the
// file handler, which it may hand paths to; its access-log attributes
// are logged; it is closed when the server stops; its error fails New.
func TestConfigHandler(t *testing.T) {
	var h *closingHandler
	ts := startServer(t, func(c *Config) {
		c.Handler = func(s Site) (http.Handler, error) {
			if s.Files == nil || s.Metrics == nil || s.Logger == nil {
				return nil, errors.New("incomplete site")
			}
			h = &closingHandler{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasPrefix(r.URL.Path, "/app/") {
					s.Files.ServeHTTP(w, r)
					return
				}
				if AddAccessLogAttrs(struct{ http.ResponseWriter }{w}) {
					t.Error("AddAccessLogAttrs found the access log through a writer without Unwrap")
				}
				if !AddAccessLogAttrs(w, slog.String("upstream", "test")) {
					t.Error("AddAccessLogAttrs did not find the access log")
				}
				w.WriteHeader(http.StatusAccepted)
			})}
			return h, nil
		}
	})
	h2, _ := ts.clients(t)
	if resp, _ := get(t, h2, "POST", ts.URL()+"app/x"); resp.StatusCode != http.StatusAccepted || resp.Header.Get("Alt-Svc") == "" {
		t.Errorf("POST /app/x: %d, Alt-Svc %q", resp.StatusCode, resp.Header.Get("Alt-Svc"))
	}
	if resp, body := get(t, h2, "GET", ts.URL()); resp.StatusCode != 200 || !strings.Contains(body, "TurboRetry") {
		t.Errorf("GET / (files): %d", resp.StatusCode)
	}
	if resp, _ := get(t, h2, "POST", ts.URL()); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / (files): %d", resp.StatusCode)
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	if n := h.closed.Load(); n < 1 {
		t.Error("the handler was not closed")
	}
	var found bool
	for _, r := range ts.logs.records(t) {
		if r["msg"] == "request" && r["path"] == "/app/x" {
			found = r["upstream"] == "test" && r["status"] == float64(202)
		}
	}
	if !found {
		t.Errorf("no access-log record with the handler's attribute:\n%s", ts.logs.String())
	}

	_, err := New(Config{Addr: "127.0.0.1:0", StateDir: t.TempDir(), Handler: func(Site) (http.Handler, error) {
		return nil, errors.New("no upstream")
	}})
	if err == nil || !strings.Contains(err.Error(), "no upstream") {
		t.Errorf("New with a failing Handler: %v", err)
	}
}
