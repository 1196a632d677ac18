package quic

import (
	"bytes"
	"io"
	"testing"
)

func TestHandshakeOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			errc <- err
			return
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			errc <- err
			return
		}
		data, err := io.ReadAll(s)
		if err != nil {
			errc <- err
			return
		}
		if _, err := s.Write(data); err != nil {
			errc <- err
			return
		}
		errc <- s.Close()
	}()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if p := c.ConnectionState().TLS.NegotiatedProtocol; p != testALPN {
		t.Fatalf("ALPN %q", p)
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello, QUIC")
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echo %q, want %q", got, msg)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
