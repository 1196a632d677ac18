package http3

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

// TestShutdownWaitsForSlowReader: a response whose handler has returned
// but whose client still reads it (slowly: 4 KiB every 100 ms, a whole
// second of virtual time between the handler's end and the last byte, and
// many more) is not cut off by Shutdown. The connection went away with
// GOAWAY and has no request left, but packets still flow, so the server
// waits; it closes 2 s after the last packet in either direction. (Before,
// it closed 2 s after the last request ended and the client lost the tail
// of the response: what a server draining after a restart must not do.)
func TestShutdownWaitsForSlowReader(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		returned := make(chan struct{})
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(returned)
			_, _ = w.Write(body)
		})}
		addr, clientTLS := simServe(t, n, s)
		tr := simTransport(t, n, clientTLS)
		req, _ := http.NewRequest(http.MethodGet, localhostURL(t, addr, "/"), nil)
		rsp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		read := make(chan error, 1)
		var got bytes.Buffer
		go func() {
			buf := make([]byte, 4<<10)
			for {
				n, err := rsp.Body.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					read <- err
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		<-returned
		began := time.Now()
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(context.Background()) }()
		if err := <-read; err != io.EOF || !bytes.Equal(got.Bytes(), body) {
			t.Fatalf("read %d of %d bytes, equal %v, then %v (%v after Shutdown began)",
				got.Len(), len(body), bytes.Equal(got.Bytes(), body), err, time.Since(began))
		}
		if time.Since(began) < 3*time.Second {
			t.Fatalf("the tail took only %v: the test no longer outlasts the 2 s drain", time.Since(began))
		}
		rsp.Body.Close()
		tr.Close() // the client closes its connection: Shutdown returns
		if err := <-shut; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	})
}
