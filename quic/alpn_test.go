package quic

import (
	"crypto/tls"
	"errors"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// A server without any way to offer an application protocol fails at
// Listen; a client without one fails in the handshake (as with quic-go),
// with the server's no_application_protocol alert.
func TestALPNRequired(t *testing.T) {
	ctx := testCtx(t)
	sconf := serverTLS(t)
	sconf.NextProtos = nil
	if _, err := ListenAddr("127.0.0.1:0", sconf, nil); !errors.Is(err, errNoALPN) {
		t.Fatalf("listen without ALPN: %v", err)
	}
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conf := clientTLS(t)
	conf.NextProtos = nil
	_, err = DialAddr(ctx, ln.Addr().String(), conf, nil)
	var te *TransportError
	if !errors.As(err, &te) || te.ErrorCode != 0x178 || !te.Remote {
		t.Fatalf("dial without ALPN: %v, want remote CRYPTO_ERROR 0x178", err)
	}
}

// Issue 15: quic-go accepts a listener whose base tls.Config has no
// NextProtos (nor certificates) when tls.Config.GetConfigForClient returns
// a config that has them; so must we, for our client and quic-go's.
func TestALPNFromGetConfigForClient(t *testing.T) {
	ctx := testCtx(t)
	full := serverTLS(t)
	base := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return full, nil }}
	ln, err := ListenAddr("127.0.0.1:0", base, nil)
	if err != nil {
		t.Fatalf("listen with ALPN from GetConfigForClient: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			_ = c.CloseWithError(0, "")
		}
	}()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatalf("our client: %v", err)
	}
	if p := c.ConnectionState().TLS.NegotiatedProtocol; p != testALPN {
		t.Fatalf("negotiated %q", p)
	}
	_ = c.CloseWithError(0, "")
	qc, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatalf("quic-go client: %v", err)
	}
	_ = qc.CloseWithError(0, "")
}

// Issue 15: like quic-go, Dial fills an empty ServerName from the address
// (here an IP, which the test certificate also names).
func TestDialFillsServerName(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conf := clientTLS(t)
	conf.ServerName = ""
	// crypto/tls refuses an empty ServerName without InsecureSkipVerify;
	// the certificate is verified against 127.0.0.1.
	c, err := Dial(ctx, listenUDP(t), ln.Addr(), conf, nil)
	if err != nil {
		t.Fatalf("Dial without ServerName: %v", err)
	}
	defer c.CloseWithError(0, "")
	if conf.ServerName != "" {
		t.Fatal("the caller's tls.Config was changed")
	}
}

func TestALPNMismatch(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conf := clientTLS(t)
	conf.NextProtos = []string{"other"}
	_, err = DialAddr(ctx, ln.Addr().String(), conf, nil)
	var te *TransportError
	if !errors.As(err, &te) || te.ErrorCode != 0x178 || !te.Remote {
		t.Fatalf("our client: %v, want remote CRYPTO_ERROR 0x178", err)
	}
	_, err = quicgo.DialAddr(ctx, ln.Addr().String(), conf, &quicgo.Config{})
	var qte *quicgo.TransportError
	if !errors.As(err, &qte) || qte.ErrorCode != 0x178 || !qte.Remote {
		t.Fatalf("quic-go client: %v, want remote CRYPTO_ERROR 0x178", err)
	}
}
