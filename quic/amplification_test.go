package quic

import (
	"crypto/tls"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
)

// TestAmplificationLimit: before the client's address is validated the
// server sends at most three times what it received (RFC 9000 section 8),
// here one Initial flight, although its certificate flight is larger, and
// although its PTO fires meanwhile.
func TestAmplificationLimit(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		sconf := serverTLS(t)
		// A long certificate chain makes the server's flight exceed 3 x 1200.
		big := sconf.Certificates[0]
		leaf := big.Certificate[0]
		big.Certificate = nil
		for range 20 {
			big.Certificate = append(big.Certificate, leaf)
		}
		sconf.Certificates = []tls.Certificate{big}
		tr := &Transport{Conn: s.socket(simServerAddr)}
		t.Cleanup(func() { tr.Close() })
		ln, err := tr.Listen(sconf, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The gate lets only the client's first two datagrams through (a
		// ClientHello with a post-quantum key share takes two Initials)
		// until opened, and counts what the server sends meanwhile.
		client := simClientAddr(1)
		var mu sync.Mutex
		open, passed, first, received := false, 0, 0, 0
		s.tap(func(p *simnet.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case open:
			case p.From == client && passed < 2:
				passed++
				first += len(p.Data)
			case p.From == client:
				return false
			default:
				received += len(p.Data)
			}
			return true
		})
		done := make(chan error, 1)
		ctr := &quicgo.Transport{Conn: s.socket(client).Conn}
		t.Cleanup(func() { ctr.Close() })
		ctx, ctls := s.ctx(), clientTLS(t)
		go func() {
			c, err := ctr.Dial(ctx, ln.Addr(), ctls, &quicgo.Config{})
			if err == nil {
				_ = c.CloseWithError(0, "")
			}
			done <- err
		}()
		// Past the server's first PTOs; none of it may exceed the limit.
		time.Sleep(3 * time.Second)
		mu.Lock()
		open = true
		mu.Unlock()
		if received > 3*first {
			t.Fatalf("server sent %d bytes for %d bytes of Initials", received, first)
		}
		// The flight is larger than the limit: the server must have used most
		// of its allowance (it may leave less than one small packet unused).
		if received < 3*first-maxPacketSize {
			t.Fatalf("server sent only %d bytes of %d allowed", received, 3*first)
		}
		// With the gate open the handshake completes.
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
