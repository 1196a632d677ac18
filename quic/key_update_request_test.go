package quic

import (
	"errors"
	"testing"
)

// TestInitiateKeyUpdate: a key update asked for right after the dial,
// before the handshake is confirmed, happens as soon as it is allowed; the
// peer (ours or quic-go's) reads the new key phase, shown by its
// acknowledgment of a packet sealed with the new keys. Two calls before the
// update ask for one update. It runs in virtual time: the update needs the
// server's HANDSHAKE_DONE and an acknowledgment, a round trip after the
// dial returns, and the clock cannot move while the test goroutine runs,
// so the second call always comes before the update (on a loopback socket
// a stall between the calls let the first update happen, and the second
// then asked for another).
func TestInitiateKeyUpdate(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				addr := s.peerServer(peer)
				c := s.dial(simClientAddr(1), addr, nil)
				if err := c.InitiateKeyUpdate(); err != nil {
					t.Fatal(err)
				}
				if err := c.InitiateKeyUpdate(); err != nil { // the same update
					t.Fatal(err)
				}
				st, err := c.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				echoCheck(t, st, testData(300_000, 4))
				waitFor(t, "a packet of the new key phase acknowledged", func() bool {
					c.mu.Lock()
					defer c.mu.Unlock()
					return c.keys.app.Generation() == 1 && c.keys.phaseAcked && !c.keys.updateRequested
				})
			})
		})
	}
}

func TestInitiateKeyUpdateAfterClose(t *testing.T) {
	ctx := testCtx(t)
	c, err := DialAddr(ctx, ourEchoServer(t, ctx, nil), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWithError(0, "")
	var ae *ApplicationError
	if err := c.InitiateKeyUpdate(); !errors.As(err, &ae) {
		t.Fatalf("InitiateKeyUpdate after close: %v, want the close error", err)
	}
}
