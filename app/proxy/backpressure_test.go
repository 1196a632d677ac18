package proxy

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// backpressureBound is what may be in flight between a stalled reader
// and a writer: the front's QUIC send buffer (16 MiB), the QUIC windows,
// loopback TCP buffers both ways and a copy buffer. A proxy that buffered
// whole bodies would let the writer send its gigabyte.
const backpressureBound = 64 << 20

// settle waits until n stops growing (unchanged for 30 polls) and
// returns it; the bound only keeps a broken build from hanging.
func settle(n *atomic.Int64) int64 {
	last, same := int64(-1), 0
	for range 2000 {
		v := n.Load()
		if v == last {
			if same++; same == 30 {
				return v
			}
		} else {
			last, same = v, 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n.Load()
}

// countingReader produces zeros up to a gigabyte, counting them.
type countingReader struct{ n *atomic.Int64 }

func (r countingReader) Read(p []byte) (int, error) {
	if r.n.Load() >= 1<<30 {
		return 0, io.EOF
	}
	clear(p)
	r.n.Add(int64(len(p)))
	return len(p), nil
}

// TestProxyBackpressure: a client that stops reading a download stops
// the upstream's writes, and an upstream that stops reading an upload
// stops the client's, with a bounded amount in between, over HTTP/3 and
// HTTP/2.
func TestProxyBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("moves tens of MiB")
	}
	checkNoLeak(t)
	var written, read atomic.Int64
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			buf := make([]byte, 32<<10)
			for written.Load() < 1<<30 {
				n, err := w.Write(buf)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		io.CopyN(io.Discard, r.Body, 1<<20)
		read.Store(1 << 20)
		<-r.Context().Done() // reads no more
	})
	up := startUpstream(t, app)
	f := startFront(t, Config{Upstreams: []string{up}}, nil)
	for _, kind := range []string{clientH3, clientH2} {
		t.Run(kind, func(t *testing.T) {
			c := f.client(t, kind)
			defer closeClient(c)
			written.Store(0)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", f.URL()+"down", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.CopyN(io.Discard, resp.Body, 1<<20)
			n := settle(&written)
			t.Logf("download: %d KiB written by the upstream", n>>10)
			if n > backpressureBound {
				t.Errorf("download: the upstream wrote %d MiB to a client that read 1 MiB", n>>20)
			}
			cancel()
			resp.Body.Close()

			var sent atomic.Int64
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			req, _ = http.NewRequestWithContext(ctx, "POST", f.URL()+"up", countingReader{&sent})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			eventually(t, "the upstream reading", func() bool { return read.Load() > 0 })
			n = settle(&sent)
			t.Logf("upload: %d KiB sent by the client", n>>10)
			if n > backpressureBound {
				t.Errorf("upload: the client sent %d MiB to an upstream that read 1 MiB", n>>20)
			}
			cancel()
			<-done
			read.Store(0)
		})
	}
}
