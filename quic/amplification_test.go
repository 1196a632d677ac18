package quic

import (
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// gateConn lets only the first two datagrams out until opened (a
// ClientHello with a post-quantum key share takes two Initials), and
// counts the bytes received meanwhile.
type gateConn struct {
	net.PacketConn
	mu       sync.Mutex
	open     bool
	passed   int
	firstLen int // bytes of the datagrams let through
	received int
}

func (g *gateConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	g.mu.Lock()
	pass := g.open || g.passed < 2
	if !g.open && pass {
		g.passed++
		g.firstLen += len(b)
	}
	g.mu.Unlock()
	if !pass {
		return len(b), nil
	}
	return g.PacketConn.WriteTo(b, addr)
}

func (g *gateConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := g.PacketConn.ReadFrom(b)
	g.mu.Lock()
	if !g.open {
		g.received += n
	}
	g.mu.Unlock()
	return n, addr, err
}

// TestAmplificationLimit: before the client's address is validated the
// server sends at most three times what it received (RFC 9000 section 8),
// here one Initial, although its certificate flight is larger.
func TestAmplificationLimit(t *testing.T) {
	ctx := testCtx(t)
	sconf := serverTLS(t)
	// A long certificate chain makes the server's flight exceed 3 x 1200.
	big := sconf.Certificates[0]
	leaf := big.Certificate[0]
	big.Certificate = nil
	for range 20 {
		big.Certificate = append(big.Certificate, leaf)
	}
	sconf.Certificates = []tls.Certificate{big}
	ln, err := ListenAddr("127.0.0.1:0", sconf, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	gate := &gateConn{PacketConn: listenUDP(t)}
	tr := &quicgo.Transport{Conn: gate}
	defer tr.Close()
	done := make(chan error, 1)
	go func() {
		c, err := tr.Dial(ctx, ln.Addr(), clientTLS(t), &quicgo.Config{})
		if err == nil {
			_ = c.CloseWithError(0, "")
		}
		done <- err
	}()
	// Give the server time to send and to retransmit on PTO; none of it
	// may exceed the limit.
	time.Sleep(1500 * time.Millisecond)
	gate.mu.Lock()
	first, received := gate.firstLen, gate.received
	gate.open = true
	gate.mu.Unlock()
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
}
