package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"
)

// TestServerReleasesTLSAfterHandshake: a server lets crypto/tls go once the
// handshake is complete; ConnectionState still reports the TLS state, and
// a post-handshake message from the client (here a KeyUpdate, which QUIC
// forbids) still closes the connection with unexpected_message, as
// crypto/tls answers it.
func TestServerReleasesTLSAfterHandshake(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		var sc *Conn
		select {
		case sc = <-srv.accepted:
		case <-time.After(time.Second):
			t.Fatal("no connection accepted")
		}
		time.Sleep(time.Second) // the client's ACKs and the ticket settle
		sc.mu.Lock()
		released := sc.hs.tls == nil
		sc.mu.Unlock()
		if !released {
			t.Error("the server still holds crypto/tls after the handshake")
		}
		st := sc.ConnectionState().TLS
		if !st.HandshakeComplete || st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != c.ConnectionState().TLS.NegotiatedProtocol {
			t.Errorf("server TLS state after the release: %+v", st)
		}
		if _, err := st.ExportKeyingMaterial("test", nil, 16); err != nil {
			t.Errorf("ExportKeyingMaterial after the release: %v", err)
		}

		// A KeyUpdate (type 24, one byte of body) in 1-RTT CRYPTO, split
		// over two frames so that the server has to count a message in
		// flight.
		for _, part := range [][]byte{{24, 0}, {0, 1, 0}} {
			c.mu.Lock()
			c.spaces[spaceApp].crypto.Write(part)
			c.mu.Unlock()
			c.wake()
			time.Sleep(100 * time.Millisecond)
		}
		select {
		case <-sc.Context().Done():
		case <-time.After(time.Second):
			t.Fatal("the server did not close the connection")
		}
		var te *TransportError
		if err := context.Cause(sc.Context()); !errors.As(err, &te) || te.ErrorCode != TransportErrorCode(0x100+10) {
			t.Fatalf("server closed with %v, want CRYPTO_ERROR unexpected_message (0x10a)", err)
		}
	})
}

func TestPostHandshakeCryptoCounts(t *testing.T) {
	var p postHandshakeCrypto
	// A header in pieces, then a body of 5 bytes in pieces: only the last
	// byte completes the message.
	for _, d := range [][]byte{{4}, {0, 0}, {5, 1, 2}, {3, 4}} {
		if err := p.handle(d); err != nil {
			t.Fatalf("error before the message is complete: %v", err)
		}
	}
	var alert tls.AlertError
	if err := p.handle([]byte{5}); !errors.As(err, &alert) || alert != 10 {
		t.Fatalf("complete message: %v, want unexpected_message", err)
	}
	p = postHandshakeCrypto{}
	if err := p.handle([]byte{4, 1, 0, 1}); !errors.As(err, &alert) || alert != 80 {
		t.Fatalf("oversized message: %v, want internal_error", err)
	}
}
