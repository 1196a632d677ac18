package quic

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// forceKeyUpdate initiates a key update as soon as one is allowed.
func forceKeyUpdate(t *testing.T, c *Conn) {
	t.Helper()
	for range 1000 {
		c.mu.Lock()
		err := c.initiateKeyUpdate(time.Now())
		c.mu.Unlock()
		if err == nil {
			c.wake()
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("key update never allowed")
}

func keyGeneration(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.app.Generation()
}

func TestKeyUpdateDuringTransfer(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			var addr string
			if peer == "ours" {
				addr = ourEchoServer(t, ctx, nil)
			} else {
				addr = quicgoEchoServer(t, ctx)
			}
			c, err := DialAddr(ctx, addr, clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data := testData(2<<20, 9)
			errc := make(chan error, 1)
			go func() {
				half := len(data) / 2
				if _, err := s.Write(data[:half]); err != nil {
					errc <- err
					return
				}
				forceKeyUpdate(t, c)
				if _, err := s.Write(data[half:]); err != nil {
					errc <- err
					return
				}
				errc <- s.Close()
			}()
			got, err := io.ReadAll(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("data mismatch across the key update")
			}
			// quic-go also updates keys early on its own (after about 100
			// packets), so its peer may see more than one generation.
			if g := keyGeneration(c); g < 1 || (peer == "ours" && g != 1) {
				t.Fatalf("key generation %d", g)
			}
		})
	}
}
