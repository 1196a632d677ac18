package http3

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
)

// TestHeaderSetAfterWriteHeaderIsSent: as in quic-go's http3, the final
// response's HEADERS frame is built when it is sent (the first Flush,
// the first Write past what is held back, or the handler's return), so
// fields set between WriteHeader and then reach the client. A MASQUE
// proxy does WriteHeader(200), then sets Capsule-Protocol, then flushes.
// A 1xx is sent at once, with the fields set before it. The client is
// quic-go's.
func TestHeaderSetAfterWriteHeaderIsSent(t *testing.T) {
	checkGoroutines(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.Header().Set("Capsule-Protocol", "?1")
		w.(http.Flusher).Flush()
		w.Header().Set("X-After-Flush", "1") // too late: the header is out
		_, _ = io.WriteString(w, "tunnel")
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-After", "2")
		w.Header().Set("Content-Length", "5")
		_, _ = io.WriteString(w, "hello")
		w.Header().Set("X-After-Write", "3") // still in time: the body is held back
	})
	mux.HandleFunc("/interim", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("X-Final", "1")
		w.WriteHeader(http.StatusOK)
		w.Header().Set("X-After", "2")
	})
	mux.HandleFunc("/trailer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("X-Checksum", "early") // a declared trailer is no header field
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "data")
		w.Header().Set("X-Checksum", "late")
	})
	t.Run("ours", func(t *testing.T) {
		_, addr, clientTLS := startServer(t, mux)
		checkHeadersAfterWriteHeader(t, addr, clientTLS)
	})
	// The reference: the same handlers on quic-go's server pass too.
	t.Run("quic-go", func(t *testing.T) {
		addr, clientTLS := startQuicGoServer(t, mux)
		checkHeadersAfterWriteHeader(t, addr, clientTLS)
	})
}

func checkHeadersAfterWriteHeader(t *testing.T, addr string, clientTLS *tls.Config) {
	c, _ := quicGoClient(t, clientTLS)
	get := func(path string, trace *httptrace.ClientTrace) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if trace != nil {
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		}
		rsp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		body, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatalf("%s: reading the body: %v", path, err)
		}
		return rsp, string(body)
	}

	rsp, body := get("/flush", nil)
	if rsp.StatusCode != http.StatusOK || body != "tunnel" {
		t.Errorf("/flush: %d %q", rsp.StatusCode, body)
	}
	if got := rsp.Header.Get("Capsule-Protocol"); got != "?1" {
		t.Errorf("/flush: Capsule-Protocol %q, want ?1 (set after WriteHeader, before Flush)", got)
	}
	if _, ok := rsp.Header["X-After-Flush"]; ok {
		t.Errorf("/flush: a field set after the header was flushed was sent")
	}

	rsp, body = get("/write", nil)
	if rsp.StatusCode != http.StatusAccepted || body != "hello" {
		t.Errorf("/write: %d %q", rsp.StatusCode, body)
	}
	for k, v := range map[string]string{"X-Before": "1", "X-After": "2", "X-After-Write": "3"} {
		if got := rsp.Header.Get(k); got != v {
			t.Errorf("/write: %s %q, want %q", k, got, v)
		}
	}
	if rsp.ContentLength != 5 {
		t.Errorf("/write: ContentLength %d, want the handler's 5", rsp.ContentLength)
	}

	rsp, body = get("/trailer", nil)
	if _, ok := rsp.Header["X-Checksum"]; ok || body != "data" || rsp.Trailer.Get("X-Checksum") != "late" {
		t.Errorf("/trailer: header %v, body %q, trailer %v; want X-Checksum: late in the trailer only", rsp.Header, body, rsp.Trailer)
	}

	var interim []textproto.MIMEHeader
	rsp, _ = get("/interim", &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == http.StatusEarlyHints {
				interim = append(interim, h)
			}
			return nil
		},
	})
	if len(interim) != 1 || interim[0].Get("Link") == "" || interim[0].Get("X-Final") != "" {
		t.Errorf("/interim: 103 responses %v, want one with Link only", interim)
	}
	if rsp.Header.Get("X-Final") != "1" || rsp.Header.Get("X-After") != "2" {
		t.Errorf("/interim: final header %v, want X-Final and X-After", rsp.Header)
	}
}
