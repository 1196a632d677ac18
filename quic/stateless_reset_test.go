package quic

import (
	"errors"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// TestStatelessResetSeenByQuicGo: our server loses its state (its Transport
// is replaced on the same socket); the new Transport, with the same key,
// answers quic-go's next packet with a stateless reset.
func TestStatelessResetSeenByQuicGo(t *testing.T) {
	ctx := testCtx(t)
	udp := listenUDP(t)
	key := &StatelessResetKey{1, 2, 3}
	tr := &Transport{Conn: udp, StatelessResetKey: key}
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if _, err := ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	tr.Close() // no CONNECTION_CLOSE is sent
	tr2 := &Transport{Conn: udp, StatelessResetKey: key}
	defer tr2.Close()
	if err := tr2.init(); err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	// quic-go does not answer packets of 42 bytes or less with a reset.
	_, _ = s.Write(make([]byte, 100))
	<-c.Context().Done()
	var sre *quicgo.StatelessResetError
	if err := connCause(c); !errors.As(err, &sre) {
		t.Fatalf("quic-go closed with %v, want a stateless reset", err)
	}
}

// TestStatelessResetDetected: quic-go's server loses its state; its new
// Transport resets our client, which reports StatelessResetError. The
// reset's random connection ID matches nothing, so with non-empty
// connection IDs the Transport routes it by its token.
func TestStatelessResetDetected(t *testing.T) {
	t.Run("zero-length CID", func(t *testing.T) { testStatelessResetDetected(t, false) })
	t.Run("4-byte CID", func(t *testing.T) { testStatelessResetDetected(t, true) })
}

func testStatelessResetDetected(t *testing.T, shared bool) {
	ctx := testCtx(t)
	udp := listenUDP(t)
	key := &quicgo.StatelessResetKey{4, 5, 6}
	tr := &quicgo.Transport{Conn: udp, StatelessResetKey: key}
	ln, err := tr.Listen(serverTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var c *Conn
	if shared {
		ct := &Transport{Conn: listenUDP(t)}
		defer ct.Close()
		c, err = ct.Dial(ctx, ln.Addr(), clientTLS(t), nil)
	} else {
		c, err = DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if _, err := ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr2 := &quicgo.Transport{Conn: udp, StatelessResetKey: key}
	defer tr2.Close()
	if _, err := tr2.Listen(serverTLS(t), &quicgo.Config{}); err != nil {
		t.Fatal(err)
	}
	// Our client may already have sent something after the handshake (an
	// ACK, its NEW_CONNECTION_ID frames) and been reset for it.
	var sre *StatelessResetError
	s, err := c.OpenStream()
	if errors.As(err, &sre) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// quic-go does not answer packets of 42 bytes or less with a reset.
	_, _ = s.Write(make([]byte, 100))
	_, err = c.AcceptStream(ctx)
	if !errors.As(err, &sre) {
		t.Fatalf("closed with %v, want StatelessResetError", err)
	}
}
