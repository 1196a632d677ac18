package quic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

// TestOptimisticAckOfSkippedPacketNumber: our sender leaves a 1-RTT packet
// number unused within its first few hundred packets; a peer that
// acknowledges it (an optimistic ACK, RFC 9000 section 21.4: here our
// server made to claim it received that number) is caught, and the
// connection closes with PROTOCOL_VIOLATION, which the peer learns.
func TestOptimisticAckOfSkippedPacketNumber(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		ctls := clientTLS(t)
		frames := s.logFrames(simClientAddr(1), ctls)
		c := s.dialTLS(simClientAddr(1), srv.addr, ctls, nil)
		// One-way data the server does not read: it sends only ACKs back,
		// which the client does not acknowledge, so the server's ACK
		// tracker remembers every packet number it received.
		st, err := c.OpenUniStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write(testData(450_000, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // every packet delivered and acknowledged

		// The client's packet numbers on the wire have a gap.
		skipped, prev := uint64(0), int64(-1)
		for _, p := range frames.packets(t, c, true, defaultConnIDLength) {
			if prev >= 0 && p.pn > uint64(prev)+1 {
				skipped = uint64(prev) + 1
				if p.pn != skipped+1 {
					t.Fatalf("packet numbers %d then %d: more than one skipped", prev, p.pn)
				}
				break
			}
			prev = int64(p.pn)
		}
		if skipped == 0 {
			t.Fatalf("the client skipped no packet number up to %d", prev)
		}

		sc := srv.only(t)
		sc.mu.Lock()
		err = sc.spaces[spaceApp].tracker.Received(skipped, true, protocol.ECNNotECT, time.Now())
		sc.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		sc.wake()
		for _, conn := range []*Conn{c, sc} {
			<-conn.Context().Done()
			var te *TransportError
			if err := context.Cause(conn.Context()); !errors.As(err, &te) || te.ErrorCode != ProtocolViolation || te.Remote != (conn == sc) {
				t.Fatalf("closed with %v, want PROTOCOL_VIOLATION (remote %v)", err, conn == sc)
			}
		}
	})
}
