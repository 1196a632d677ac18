package quic

import (
	"errors"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

func TestALPNRequired(t *testing.T) {
	ctx := testCtx(t)
	conf := clientTLS(t)
	conf.NextProtos = nil
	if _, err := DialAddr(ctx, "127.0.0.1:1", conf, nil); !errors.Is(err, errNoALPN) {
		t.Fatalf("dial without ALPN: %v", err)
	}
	sconf := serverTLS(t)
	sconf.NextProtos = nil
	if _, err := ListenAddr("127.0.0.1:0", sconf, nil); !errors.Is(err, errNoALPN) {
		t.Fatalf("listen without ALPN: %v", err)
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
