package eval

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/netns"
	"github.com/turboretry/turboretry/quic"
)

// client is the benign HTTP/3 client in the client namespace: every
// request on a fresh connection (our quic and http3 packages), as the
// paper's client.
type client struct {
	ns   string
	tls  *tls.Config
	addr string
}

// request is one benign request's outcome.
type request struct {
	Start time.Time
	// Setup is the handshake: from the dial to its completion (the
	// connection's HandshakeDuration); Total from the dial to the last
	// body byte; Transfer is Total - Setup, the paper's T1 - T2.
	Setup, Total time.Duration
	Bytes        int64
	Err          string // empty on success
}

// Transfer is the data transmission latency.
func (r request) Transfer() time.Duration { return r.Total - r.Setup }

// get fetches path on a fresh connection within limit.
func (c *client) get(ctx context.Context, path string, limit time.Duration) request {
	r := request{Start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var pc net.PacketConn
	if err := netns.In(c.ns, func() (err error) {
		pc, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
		return err
	}); err != nil {
		r.Err = err.Error()
		return r
	}
	defer pc.Close()
	ua, err := net.ResolveUDPAddr("udp4", c.addr)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	conn, err := quic.Dial(ctx, pc, ua, c.tls.Clone(), &quic.Config{})
	if err != nil {
		r.Err = "dial: " + err.Error()
		return r
	}
	defer conn.CloseWithError(0, "")
	r.Setup = conn.ConnectionStats().HandshakeDuration
	tr := &http3.Transport{TLSClientConfig: c.tls.Clone(),
		Dial: func(context.Context, string, *tls.Config, *quic.Config) (*quic.Conn, error) { return conn, nil }}
	defer tr.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.addr+path, nil)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		r.Err = "request: " + err.Error()
		return r
	}
	defer resp.Body.Close()
	r.Bytes, err = io.Copy(io.Discard, resp.Body)
	r.Total = time.Since(r.Start)
	switch {
	case err != nil:
		r.Err = "body: " + err.Error()
	case resp.StatusCode != http.StatusOK:
		r.Err = fmt.Sprintf("status %d", resp.StatusCode)
	case resp.ContentLength >= 0 && r.Bytes != resp.ContentLength:
		r.Err = fmt.Sprintf("body of %d bytes, want %d", r.Bytes, resp.ContentLength)
	}
	return r
}

// stream starts one request for path every 1/rate seconds until ctx is
// done, each within limit, and returns them all once the last finished.
func (c *client) stream(ctx context.Context, rate float64, path string, limit time.Duration) []request {
	var (
		mu  sync.Mutex
		out []request
		wg  sync.WaitGroup
	)
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(every)
	defer t.Stop()
	// The requests outlive ctx: each has its own deadline.
	reqCtx := context.WithoutCancel(ctx)
	for {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.get(reqCtx, path, limit)
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		}()
		select {
		case <-ctx.Done():
			wg.Wait()
			return out
		case <-t.C:
		}
	}
}
