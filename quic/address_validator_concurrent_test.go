package quic

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// capturePacketConn is sinkPacketConn keeping the last datagram written.
type capturePacketConn struct {
	*sinkPacketConn
	mu   sync.Mutex
	last []byte
}

func (c *capturePacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	c.last = bytes.Clone(b)
	c.mu.Unlock()
	return c.sinkPacketConn.WriteTo(b, addr)
}

// TestAddressValidationConcurrentDecisions: the listener's address
// validation may decide on two Initials at once (the read loop, and
// Transport.InjectDatagram from the offload agent's goroutine): each
// policy call sees its own Initial's fields and its own token's original
// DCID. Run with -race: a policy argument or token payload shared between
// the calls is a data race.
func TestAddressValidationConcurrentDecisions(t *testing.T) {
	remote := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000}
	var mismatches atomic.Int64
	var firstMismatch atomic.Value
	// odcidOf maps a Retry's SCID (the client's next DCID) to the
	// original DCID its token must carry.
	odcidOf := map[string][]byte{}
	policy := func(info *InitialInfo) AddressDecision {
		if !info.Token.Valid {
			return AddressRetry
		}
		want := odcidOf[string(info.DestConnID)]
		if !bytes.Equal(info.Token.OriginalDestConnID, want) {
			if mismatches.Add(1) == 1 {
				firstMismatch.Store(fmt.Sprintf("DCID %x: token's original DCID %x, want %x", info.DestConnID, info.Token.OriginalDestConnID, want))
			}
		}
		return AddressDrop // no connection: the decision is the point
	}
	c := &capturePacketConn{sinkPacketConn: newSinkPacketConn()}
	tr := &Transport{Conn: c, AddressValidation: &AddressValidationConfig{Policy: policy}}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := ln.s
	scid := []byte{9, 9, 9, 9}

	// Each client's first Initial gets a Retry; its second, with the
	// token, is what the goroutines below send.
	var second [][]byte
	for i := range 16 {
		odcid := []byte{1, 2, 3, 4, 5, 6, 7, byte(i)}
		s.handleUnknownLongHeader(receivedPacket{data: buildClientInitial(t, odcid, scid, nil, minInitialSize), remote: remote})
		c.mu.Lock()
		retry := c.last
		c.mu.Unlock()
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(retry, &hdr); err != nil || hdr.Type != wire.PacketTypeRetry {
			t.Fatalf("client %d: no Retry (%v, %v)", i, hdr.Type, err)
		}
		odcidOf[string(hdr.SrcConnID)] = odcid
		second = append(second, buildClientInitial(t, bytes.Clone(hdr.SrcConnID), scid, bytes.Clone(hdr.Token), minInitialSize))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				pkt := second[(g*7+i)%len(second)]
				s.handleUnknownLongHeader(receivedPacket{data: pkt, remote: remote})
			}
		})
	}
	wg.Wait()
	if n := mismatches.Load(); n != 0 {
		t.Fatalf("%d policy calls saw another Initial's token: %v", n, firstMismatch.Load())
	}
	if v := tr.AddressValidationStats(); v.RetriesSent != 16 {
		t.Fatalf("%d Retries sent, want 16", v.RetriesSent)
	}
}
