package proxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// patternReader is n deterministic pseudo-random bytes.
func patternReader(n int64, seed uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), n)
}

func sumOf(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// streamingApp is an upstream that streams: GET /download?n=N&seed=S
// sends N pattern bytes in chunks of unknown total length (each write
// flushed), POST /upload answers the sha256 and length of the body it
// read.
func streamingApp() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /download", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		seed, _ := strconv.ParseUint(r.URL.Query().Get("seed"), 10, 64)
		if r.URL.Query().Get("length") != "" {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, patternReader(n, seed))
	})
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		sum, n, err := sumOf(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%s %d", sum, n)
	})
	return mux
}

// TestProxyStreaming: a few MiB down and up through the proxy arrive byte
// for byte, from every client, with the upstream's length known or not;
// and the access log has the upstream fields.
func TestProxyStreaming(t *testing.T) {
	checkNoLeak(t)
	up := startUpstream(t, streamingApp())
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	const size = 3<<20 + 12345
	for _, kind := range append(allClients, clientH1) {
		t.Run(kind, func(t *testing.T) {
			c := f.client(t, kind)
			defer closeClient(c)
			for i, length := range []string{"", "&length=1"} {
				want, _, _ := sumOf(patternReader(size, uint64(i)))
				resp, err := c.Get(fmt.Sprintf("%sdownload?n=%d&seed=%d%s", f.URL(), size, i, length))
				if err != nil {
					t.Fatal(err)
				}
				got, n, err := sumOf(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || got != want || n != size || resp.Proto != wantProto(kind) {
					t.Fatalf("download%s: %d %s, %d bytes, err %v, sum match %v", length, resp.StatusCode, resp.Proto, n, err, got == want)
				}
			}
			want, _, _ := sumOf(patternReader(size, 7))
			resp, err := c.Post(f.URL()+"upload", "application/octet-stream", patternReader(size, 7))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != fmt.Sprintf("%s %d", want, size) {
				t.Fatalf("upload: %d %q", resp.StatusCode, body)
			}
		})
	}
	var found bool
	for _, r := range f.records(t) {
		if r["path"] == "/upload" && r["protocol"] == "HTTP/3.0" {
			found = r["upstream"] == up && r["upstream_status"] == float64(200) && r["upstream_time"] != nil
		}
	}
	if !found {
		t.Errorf("no HTTP/3 access-log record of /upload with the upstream fields:\n%s", f.logs.String())
	}
	if n := f.metric(t, "turboretry_proxy_upstream_requests_total", map[string]string{"upstream": up, "code": "200"}); n != 12 {
		t.Errorf("upstream requests counted: %v, want 12", n)
	}
	if n := f.metric(t, "turboretry_proxy_upstream_in_flight", map[string]string{"upstream": up}); n != 0 {
		t.Errorf("in flight after the requests: %v", n)
	}
}

// TestProxyLargeHTTP3: 64 MiB down and 64 MiB up over HTTP/3, byte for
// byte.
func TestProxyLargeHTTP3(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB each way")
	}
	checkNoLeak(t)
	up := startUpstream(t, streamingApp())
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	c := f.client(t, clientH3)
	defer closeClient(c)
	const size = 64 << 20
	want, _, _ := sumOf(patternReader(size, 1))
	resp, err := c.Get(fmt.Sprintf("%sdownload?n=%d&seed=1", f.URL(), size))
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := sumOf(resp.Body)
	resp.Body.Close()
	if err != nil || got != want || n != size {
		t.Fatalf("download: %d bytes, err %v, sum match %v", n, err, got == want)
	}
	resp, err = c.Post(f.URL()+"upload", "application/octet-stream", patternReader(size, 1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != fmt.Sprintf("%s %d", want, size) {
		t.Fatalf("upload: %d %q", resp.StatusCode, body)
	}
}

// TestProxyServerSentEvents: each event reaches the client while the
// upstream waits for the client to have it before sending the next, so
// the stream only completes if every flush is forwarded at once.
func TestProxyServerSentEvents(t *testing.T) {
	testStreamedEvents(t, func(h http.Header) { h.Set("Content-Type", "text/event-stream") })
}

// TestProxyFlushesKnownLengthStream: a response whose Content-Length is
// known is flushed as the upstream sends it too (ReverseProxy on its own
// flushes only streams of unknown length and event streams), so a long
// poll or a progress stream with a length is not held back.
func TestProxyFlushesKnownLengthStream(t *testing.T) {
	testStreamedEvents(t, func(h http.Header) {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.Itoa(4*len("data: 0\n\n")))
	})
}

// testStreamedEvents runs the event-by-event exchange of
// TestProxyServerSentEvents with the response header set by setHeader.
func testStreamedEvents(t *testing.T, setHeader func(http.Header)) {
	checkNoLeak(t)
	const events = 4
	acks := make(chan int)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeader(w.Header())
		for i := range events {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
			select {
			case got := <-acks:
				if got != i {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range allClients {
		t.Run(kind, func(t *testing.T) {
			c := f.client(t, kind)
			defer closeClient(c)
			// A bound, not a speed check: a proxy that holds the events
			// back would otherwise wait for them forever.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", f.URL()+"events", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for i := range events {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if want := fmt.Sprintf("data: %d\n", i); line != want {
					t.Fatalf("event %d: %q, want %q", i, line, want)
				}
				br.ReadString('\n')
				acks <- i // the upstream sends the next one only now
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the events: %q, %v", rest, err)
			}
		})
	}
}

// TestProxyTrailers: request trailers reach the upstream and response
// trailers, announced or not, reach the client.
func TestProxyTrailers(t *testing.T) {
	checkNoLeak(t)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Announced")
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(200)
		fmt.Fprintf(w, "body=%s req-trailer=%s", body, r.Trailer.Get("X-Req-Checksum"))
		w.Header().Set("X-Announced", "a1")
		w.Header().Set(http.TrailerPrefix+"X-Unannounced", "u1")
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range append(allClients, clientH1) {
		t.Run(kind, func(t *testing.T) {
			c := f.client(t, kind)
			defer closeClient(c)
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", f.URL()+"t", pr)
			req.Trailer = http.Header{"X-Req-Checksum": nil}
			go func() {
				io.WriteString(pw, "hello")
				req.Trailer.Set("X-Req-Checksum", "c0ffee")
				pw.Close()
			}()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d, %v", resp.StatusCode, err)
			}
			if want := "body=hello req-trailer=c0ffee"; string(body) != want {
				t.Errorf("upstream saw %q, want %q", body, want)
			}
			if a, u := resp.Trailer.Get("X-Announced"), resp.Trailer.Get("X-Unannounced"); a != "a1" || u != "u1" {
				t.Errorf("response trailers %v", resp.Trailer)
			}
			if strings.Contains(resp.Header.Get("Trailer"), "X-Req") {
				t.Errorf("Trailer field %q", resp.Header.Get("Trailer"))
			}
		})
	}
}
