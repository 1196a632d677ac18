package http3

import (
	"io"
	"net/http"
	"runtime/metrics"
	"testing"
)

// goroutinesCreated is the process's count of goroutines created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRequestsStartOneGoroutine: a request on an open connection starts
// one goroutine in the server, its handler's. It started two before: the
// second was the one context.AfterFunc starts when the response's FIN ends
// the stream's context, only to cancel a request context that the
// request's cleanup cancels anyway.
func TestRequestsStartOneGoroutine(t *testing.T) {
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	get := func() {
		rsp, err := c.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, rsp.Body)
		rsp.Body.Close()
	}
	get() // the handshake and the connection's own goroutines
	const requests = 50
	before := goroutinesCreated()
	for range requests {
		get()
	}
	created := goroutinesCreated() - before
	t.Logf("%d goroutines created for %d requests (client and server)", created, requests)
	if limit := uint64(requests + requests/2); created > limit {
		t.Errorf("%d goroutines created for %d sequential requests, want at most %d (one per request and a few)", created, requests, limit)
	}
}
