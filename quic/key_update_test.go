package quic

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// forceKeyUpdate initiates a key update as soon as one is allowed (the
// previous one must have been acknowledged).
func forceKeyUpdate(c *Conn) error {
	for range 1000 {
		c.mu.Lock()
		err := c.initiateKeyUpdate(time.Now())
		c.mu.Unlock()
		if err == nil {
			c.wake()
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("key update never allowed")
}

func keyGeneration(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys.app.Generation()
}

func TestKeyUpdateDuringTransfer(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				addr := s.peerServer(peer)
				ctls := clientTLS(t)
				frames := s.logFrames(simClientAddr(1), ctls)
				c := s.dialTLS(simClientAddr(1), addr, ctls, nil)
				st, err := c.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				data := testData(1<<20, 9)
				errc := make(chan error, 1)
				go func() {
					half := len(data) / 2
					if _, err := st.Write(data[:half]); err != nil {
						errc <- err
						return
					}
					if err := forceKeyUpdate(c); err != nil {
						errc <- err
						return
					}
					if _, err := st.Write(data[half:]); err != nil {
						errc <- err
						return
					}
					errc <- st.Close()
				}()
				got, err := io.ReadAll(st)
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
				// On the wire: each side's 1-RTT packets change key phase
				// once (our update; the peer's answer to it), and never
				// back, but for quic-go's own early updates.
				for _, fromClient := range []bool{true, false} {
					changes, phase := 0, false
					for _, p := range frames.packets(t, c, fromClient, defaultConnIDLength) {
						if p.keyPhase != phase {
							changes++
							phase = p.keyPhase
						}
					}
					if changes < 1 || (peer == "ours" && changes != 1) {
						t.Errorf("the key phase of the %s packets changed %d times", map[bool]string{true: "client's", false: "server's"}[fromClient], changes)
					}
				}
			})
		})
	}
}
