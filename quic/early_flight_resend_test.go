package quic

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/testutil/initial"
	"github.com/turboretry/turboretry/internal/wire"
)

// TestServerEarlyFlightResendsBounded: a client Initial that brings no new
// CRYPTO data (here a PING, as a client's probe carries) makes the server
// resend its unacknowledged flight at once (onClientInitialProbe), at most
// maxEarlyFlightResends times per connection. A client whose probes keep
// coming, twice as many as the limit, within a fraction of the server's
// PTO, gets the first flight and exactly that many resends; later probes
// get an ACK alone. The last probe is still acknowledged, and the server
// stays within the amplification limit.
func TestServerEarlyFlightResendsBounded(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		client := simClientAddr(1)

		// The server's datagrams never reach the client: its flight stays
		// unacknowledged. The test reads them with the client's Initial
		// keys, which the client's first datagram gives.
		var (
			mu          sync.Mutex
			first       []byte // the client's first datagram
			fromServer  [][]byte
			sentBytes   int // by the server
			clientBytes int // received by the server
		)
		s.tap(func(p *simnet.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			if p.From == simServerAddr {
				fromServer = append(fromServer, append([]byte(nil), p.Data...))
				sentBytes += len(p.Data)
				return false
			}
			if first == nil {
				first = append([]byte(nil), p.Data...)
			}
			clientBytes += len(p.Data)
			return true
		})
		ctx, cancel := context.WithCancel(s.ctx())
		dialed := make(chan struct{})
		go func() {
			defer close(dialed)
			_, _ = s.transport(client).Dial(ctx, srv.addr, clientTLS(t), nil)
		}()
		defer func() {
			cancel()
			<-dialed
		}()
		time.Sleep(3 * simLink.Delay) // the server's flight went out

		mu.Lock()
		var hdr wire.LongHeader
		if first == nil || wire.ParseLongHeader(first, &hdr) != nil || hdr.Type != wire.PacketTypeInitial {
			mu.Unlock()
			t.Fatal("no client Initial")
		}
		flightBytes := sentBytes
		mu.Unlock()
		_, opener, err := handshake.NewInitialKeys(hdr.DestConnID, handshake.Version(wire.Version1), true)
		if err != nil {
			t.Fatal(err)
		}

		const probes = 2 * maxEarlyFlightResends
		for i := range probes {
			probe := initial.Build(t, initial.Packet{DCID: hdr.DestConnID, SCID: hdr.SrcConnID, PN: uint64(100 + i), Payload: []byte{byte(wire.FrameTypePing)}, Size: minInitialSize})
			s.net.Inject(simnet.Packet{From: client, To: simServerAddr, Data: probe}, simLink.Delay)
			mu.Lock()
			clientBytes += len(probe) // an injected datagram passes no tap
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		// Well before the server's own PTO (about a second without an RTT
		// sample), which would resend the flight again.
		time.Sleep(100 * time.Millisecond)

		mu.Lock()
		defer mu.Unlock()
		flights, acked := 0, map[uint64]bool{}
		for _, d := range fromServer {
			for pkt, err := range coalesced.Packets(d) {
				var h wire.LongHeader
				if err != nil || wire.ParseLongHeader(pkt, &h) != nil || h.Type != wire.PacketTypeInitial {
					continue
				}
				payload, _, err := opener.UnprotectPacket(append([]byte(nil), pkt...), h.PNOffset, -1)
				if err != nil {
					t.Fatalf("server Initial: %v", err)
				}
				var f wire.Frame
				for len(payload) > 0 {
					n, err := wire.ParseFrame(payload, &f)
					if err != nil {
						t.Fatalf("server Initial: %v", err)
					}
					payload = payload[n:]
					switch f.Type {
					case wire.FrameTypeCrypto:
						if f.Offset == 0 {
							flights++ // the ServerHello again: the flight from its start
						}
					case wire.FrameTypeAck, wire.FrameTypeAckECN:
						for _, r := range f.AckRanges {
							for pn := r.Smallest; pn <= r.Largest; pn++ {
								acked[pn] = true
							}
						}
					}
				}
			}
		}
		if want := 1 + maxEarlyFlightResends; flights != want {
			t.Errorf("the server sent its flight %d times for %d probes, want %d (the first and %d resends)", flights, probes, want, maxEarlyFlightResends)
		}
		if !acked[100+probes-1] {
			t.Errorf("the last probe was not acknowledged")
		}
		// Past the limit a probe gets an ACK alone (a small datagram).
		const ackOnlyBound = 100
		if bound := (1+maxEarlyFlightResends)*flightBytes + (probes-maxEarlyFlightResends)*ackOnlyBound; sentBytes > bound {
			t.Errorf("the server sent %d bytes (its flight is %d), more than %d", sentBytes, flightBytes, bound)
		}
		if sentBytes > 3*clientBytes {
			t.Errorf("the server sent %d bytes for %d received, beyond the amplification limit", sentBytes, clientBytes)
		}
	})
}
