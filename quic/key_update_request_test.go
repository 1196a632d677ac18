package quic

import (
	"errors"
	"testing"
)

// TestInitiateKeyUpdate: a key update asked for right after the dial,
// before the handshake is confirmed, happens as soon as it is allowed; the
// peer (ours or quic-go's) reads the new key phase, shown by its
// acknowledgment of a packet sealed with the new keys.
func TestInitiateKeyUpdate(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			addr := quicgoEchoServer(t, ctx)
			if peer == "ours" {
				addr = ourEchoServer(t, ctx, nil)
			}
			c, err := DialAddr(ctx, addr, clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			if err := c.InitiateKeyUpdate(); err != nil {
				t.Fatal(err)
			}
			if err := c.InitiateKeyUpdate(); err != nil { // the same update
				t.Fatal(err)
			}
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			echoCheck(t, s, testData(300_000, 4))
			waitFor(t, "a packet of the new key phase acknowledged", func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.keys.app.Generation() == 1 && c.keys.phaseAcked && !c.x.keyUpdateRequested
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
