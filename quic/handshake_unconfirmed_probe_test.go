package quic

import (
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
)

// TestUnconfirmedClientProbesIn1RTT: our client's handshake is complete
// but not confirmed, and quic-go's server, which got our Finished, has
// dropped its Handshake keys; everything it sends in 1-RTT (ACKs,
// HANDSHAKE_DONE, the echo) is lost for a while. Probes of our Handshake
// space alone reach a server that can no longer read them: the probes
// carry an ack-eliciting 1-RTT packet too (RFC 9002 6.2.4, packets of the
// other spaces with data in flight), whose acknowledgment confirms the
// handshake (RFC 9001 4.1.2). Without it the client heard nothing until
// the server's own, backed-off PTO, past the client's idle timeout (as
// in a TestCorruptHandshakesOurClientQuicGoServer failure: the server's
// RTT estimate, inflated by the lossy handshake, put its probes 11 s
// apart).
func TestUnconfirmedClientProbesIn1RTT(t *testing.T) {
	const blackout = 8 * time.Second
	simTest(t, lossyHandshakeLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{})
		start := time.Now()
		var (
			mu            sync.Mutex
			coalesced1RTT int // client datagrams with a Handshake and a 1-RTT packet
			firstThrough  time.Duration
		)
		s.tap(func(p *simnet.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			if p.To == simServerAddr {
				handshake, oneRTT := false, false
				for pkt, err := range coalesced.Packets(p.Data) {
					if err != nil {
						break
					}
					handshake = handshake || pkt[0]&0xf0 == 0xe0
					oneRTT = oneRTT || pkt[0]&0x80 == 0
				}
				if handshake && oneRTT {
					coalesced1RTT++
				}
				return true
			}
			if p.Data[0]&0x80 != 0 {
				return true // the server's handshake flight
			}
			if time.Since(start) < blackout {
				return false
			}
			if firstThrough == 0 {
				firstThrough = time.Since(start)
			}
			return true
		})
		tr := &Transport{Conn: s.socket(simClientAddr(1))}
		defer tr.Close()
		c, err := tr.Dial(s.ctx(), addr, clientTLS(t), &Config{MaxIdleTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		err = echoErr(s.ctx(), c, c.OpenStreamSync, 1000)
		mu.Lock()
		defer mu.Unlock()
		t.Logf("echo done at %v; the first server 1-RTT datagram through at %v; %d client datagrams coalesced Handshake and 1-RTT", time.Since(start), firstThrough, coalesced1RTT)
		if err != nil {
			t.Fatal(err)
		}
	})
}
