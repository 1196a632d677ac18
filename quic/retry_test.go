package quic

import (
	"net"
	"sync/atomic"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// TestClientFollowsRetry: quic-go's server validates addresses with Retry;
// our client must follow it and check retry_source_connection_id.
func TestClientFollowsRetry(t *testing.T) {
	ctx := testCtx(t)
	var retries atomic.Int32
	tr := &quicgo.Transport{
		Conn: listenUDP(t),
		VerifySourceAddress: func(net.Addr) bool {
			retries.Add(1)
			return true
		},
	}
	defer tr.Close()
	ln, err := tr.Listen(serverTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		buf := make([]byte, 5)
		n, _ := s.Read(buf)
		_, _ = s.Write(buf[:n])
		_ = s.Close()
	}()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if retries.Load() == 0 {
		t.Fatal("server never asked to validate the address")
	}
	c.mu.Lock()
	retried := c.cids.retrySrc != nil
	c.mu.Unlock()
	if !retried {
		t.Fatal("client did not process a Retry")
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("hello"))
}
