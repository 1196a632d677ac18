package http3

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// testHandler serves the requests the client tests send: /hello, /echo
// (the request body back, its trailer "X-Sum" copied as a response
// trailer) and /trailers.
func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello "+r.Proto)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Request-Trailer")
		if _, err := io.Copy(w, r.Body); err != nil {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("X-Request-Trailer", r.Trailer.Get("X-Sum"))
	})
	mux.HandleFunc("/trailers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "body")
		w.Header().Set("X-Checksum", "abc")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	})
	return mux
}

// clientSuite runs the client checks against a server at addr.
func clientSuite(t *testing.T, addr string, clientTLS *tls.Config) {
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	base := "https://" + addr

	t.Run("get", func(t *testing.T) {
		rsp, err := client.Get(base + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		got, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if rsp.StatusCode != 200 || string(got) != "hello HTTP/3.0" || rsp.Proto != "HTTP/3.0" {
			t.Fatalf("status %d proto %q body %q", rsp.StatusCode, rsp.Proto, got)
		}
	})

	t.Run("post-echo-1MB", func(t *testing.T) {
		want := make([]byte, 1<<20)
		rand.Read(want)
		req, _ := http.NewRequest(http.MethodPost, base+"/echo", io.MultiReader(bytes.NewReader(want)))
		req.Trailer = http.Header{"X-Sum": nil}
		req.ContentLength = -1
		req.Trailer.Set("X-Sum", "s1") // sent after the body, read by the server after its end
		rsp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		got, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("echo returned %d bytes, differing", len(got))
		}
		if v := rsp.Trailer.Get("X-Request-Trailer"); v != "s1" {
			t.Fatalf("request trailer echoed as %q, want s1", v)
		}
	})

	t.Run("trailers", func(t *testing.T) {
		rsp, err := client.Get(base + "/trailers")
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		if _, ok := rsp.Trailer["X-Checksum"]; !ok {
			t.Fatalf("Trailer not announced: %v", rsp.Trailer)
		}
		got, err := io.ReadAll(rsp.Body)
		if err != nil || string(got) != "body" {
			t.Fatalf("body %q, %v", got, err)
		}
		if rsp.Trailer.Get("X-Checksum") != "abc" || rsp.Trailer.Get("X-Late") != "late" {
			t.Fatalf("trailers %v", rsp.Trailer)
		}
	})
}

func TestClientWithOurServer(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, testHandler())
	clientSuite(t, addr, clientTLS)
}

func TestEarlyDataSafe(t *testing.T) {
	body := io.NopCloser(strings.NewReader("x"))
	cases := []struct {
		method string
		body   io.ReadCloser
		want   bool
	}{
		{http.MethodGet, nil, true},
		{"", nil, true},
		{http.MethodHead, http.NoBody, true},
		{http.MethodGet, body, false},
		{http.MethodPost, nil, false},
		{http.MethodPut, http.NoBody, false},
		{http.MethodDelete, nil, false},
	}
	for _, c := range cases {
		req := &http.Request{Method: c.method, Body: c.body}
		if got := earlyDataSafe(req); got != c.want {
			t.Errorf("earlyDataSafe(%q, body=%v) = %v, want %v", c.method, c.body != nil, got, c.want)
		}
	}
}

func TestAuthorityAddr(t *testing.T) {
	for _, c := range []struct{ host, want string }{
		{"example.com", "example.com:443"},
		{"example.com:8443", "example.com:8443"},
		{"127.0.0.1", "127.0.0.1:443"},
		{"[::1]", "[::1]:443"},
		{"[::1]:4433", "[::1]:4433"},
	} {
		if got := authorityAddr(&url.URL{Host: c.host}); got != c.want {
			t.Errorf("authorityAddr(%q) = %q, want %q", c.host, got, c.want)
		}
	}
}

// TestRoundTripOpt: OnlyCachedConn uses a pooled connection and fails
// with ErrNoCachedConn instead of dialing; MethodGet0RTT and
// MethodHead0RTT are sent as GET and HEAD.
func TestRoundTripOpt(t *testing.T) {
	checkGoroutines(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Method", r.Method)
		io.WriteString(w, r.Method)
	})
	_, addr, clientTLS := startServer(t, h)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	do := func(method string, opt RoundTripOpt) (string, error) {
		req, _ := http.NewRequest(method, "https://"+addr+"/", nil)
		rsp, err := tr.RoundTripOpt(req, opt)
		if err != nil {
			return "", err
		}
		defer rsp.Body.Close()
		_, err = io.ReadAll(rsp.Body)
		return rsp.Header.Get("X-Method"), err
	}
	if _, err := do(http.MethodGet, RoundTripOpt{OnlyCachedConn: true}); err != ErrNoCachedConn {
		t.Fatalf("OnlyCachedConn without a connection: %v", err)
	}
	if got, err := do(MethodGet0RTT, RoundTripOpt{}); err != nil || got != http.MethodGet {
		t.Fatalf("MethodGet0RTT: %q, %v", got, err)
	}
	if got, err := do(http.MethodPost, RoundTripOpt{OnlyCachedConn: true}); err != nil || got != http.MethodPost {
		t.Fatalf("OnlyCachedConn with a connection: %q, %v", got, err)
	}
	if got, err := do(MethodHead0RTT, RoundTripOpt{OnlyCachedConn: true}); err != nil || got != http.MethodHead {
		t.Fatalf("MethodHead0RTT: %q, %v", got, err)
	}
}
